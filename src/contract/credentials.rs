//! The pull secret file (or a bare agent token): which value is sent as the
//! agent token, and which strings are secrets to scrub from everything the
//! reporter ships.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::secret::Secret;

/// Credentials read from a pull secret or a bare token.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// Sent as `X-Secret-Key`.
    pub token: Secret,
    /// Every secret string worth scrubbing from shipped content: the token,
    /// every registry auth of the pull secret, and the pull secret text itself.
    pub scrub: Vec<Secret>,
}

#[derive(Deserialize)]
struct PullSecret {
    auths: BTreeMap<String, RegistryAuth>,
}

#[derive(Deserialize)]
struct RegistryAuth {
    auth: Option<String>,
}

const CLOUD_REGISTRY: &str = "cloud.openshift.com";

/// Extracts the agent token from a pull secret JSON, or takes a bare token.
/// The token is the raw `auth` of `cloud.openshift.com`, sent as-is (still
/// base64): that is what the hosted service expects.
pub fn parse_credentials(text: &str) -> Result<Credentials, String> {
    // A byte order mark (a pull secret saved by a Windows editor) is no part
    // of the JSON or the token; the file reader strips it too, but not the
    // environment's PULL_SECRET_TOKEN.
    let trimmed = crate::bounded_read::strip_bom(text.trim_start()).trim();
    if trimmed.is_empty() {
        return Err("it is empty".into());
    }
    if trimmed.starts_with('{') {
        // Only the kind and position of a parse error: serde's message quotes
        // the offending value ("invalid type: string \"…\""), which may be
        // the secret itself (found by fuzz/credentials).
        let secret: PullSecret = serde_json::from_str(trimmed).map_err(|err| {
            let kind = match err.classify() {
                serde_json::error::Category::Syntax => "invalid JSON",
                serde_json::error::Category::Eof => "JSON cut short",
                serde_json::error::Category::Data => {
                    "not the pull secret's shape {\"auths\":{REGISTRY:{\"auth\":…}}}"
                }
                serde_json::error::Category::Io => "unreadable",
            };
            format!(
                "not a pull secret JSON ({kind} at line {} column {})",
                err.line(),
                err.column()
            )
        })?;
        let token = secret
            .auths
            .get(CLOUD_REGISTRY)
            .and_then(|a| a.auth.clone())
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| format!("the pull secret has no auths[\"{CLOUD_REGISTRY}\"].auth"))?;
        // Trimmed, like the token: the value sent (and maybe logged by a
        // proxy) must be among what the bundles scrub.
        let mut scrub: Vec<Secret> = secret
            .auths
            .values()
            .filter_map(|a| a.auth.as_deref().map(str::trim))
            .filter(|a| !a.is_empty())
            .map(|a| Secret::from(a.to_owned()))
            .collect();
        scrub.push(Secret::from(trimmed.to_owned()));
        return Ok(Credentials {
            token: Secret::from(token.trim().to_owned()),
            scrub,
        });
    }
    if trimmed.chars().any(char::is_whitespace) || !trimmed.is_ascii() {
        return Err("a bare token must be one printable ASCII word".into());
    }
    Ok(Credentials {
        token: Secret::from(trimmed.to_owned()),
        scrub: vec![Secret::from(trimmed.to_owned())],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_the_raw_cloud_auth_of_a_pull_secret() {
        let text = r#"{"auths":{"quay.io":{"auth":"cXVheTpzZWNyZXQ=","email":"a@b"},
            "cloud.openshift.com":{"auth":"b3BlbnNoaWZ0LXJlbGVhc2UtZGV2K29jbV9hY2Nlc3M6WFla","email":"a@b"}}}"#;
        let creds = parse_credentials(text).unwrap();
        assert_eq!(
            creds.token.expose(),
            "b3BlbnNoaWZ0LXJlbGVhc2UtZGV2K29jbV9hY2Nlc3M6WFla"
        );
        let scrub: Vec<&str> = creds.scrub.iter().map(Secret::expose).collect();
        assert!(scrub.contains(&"cXVheTpzZWNyZXQ="));
        assert!(scrub.contains(&text.trim()));
    }

    #[test]
    fn bare_token_and_malformed_secrets() {
        assert_eq!(
            parse_credentials("  eyJhbGciOi.abc.def \n")
                .unwrap()
                .token
                .expose(),
            "eyJhbGciOi.abc.def"
        );
        assert!(parse_credentials("").unwrap_err().contains("empty"));
        assert!(parse_credentials("two words").is_err());
        let creds =
            parse_credentials("\u{feff}{\"auths\":{\"cloud.openshift.com\":{\"auth\":\"tok\"}}}")
                .unwrap();
        assert_eq!(creds.token.expose(), "tok");
        let err = parse_credentials(r#"{"auths":{"quay.io":{"auth":"eA=="}}}"#).unwrap_err();
        assert!(err.contains("cloud.openshift.com"), "{err}");
        let err = parse_credentials(r#"{"auths": {"cloud.openshift.com": {"auth": "SECRETVALUE""#)
            .unwrap_err();
        assert!(!err.contains("SECRETVALUE"), "{err}");
        // Found by fuzz/credentials: a wrong type used to be quoted.
        let err =
            parse_credentials(r#"{"auths":{"cloud.openshift.com":"SECRETVALUE"}}"#).unwrap_err();
        assert!(!err.contains("SECRETVALUE"), "{err}");
        assert!(err.contains("line 1 column"), "{err}");
        // The token sent is trimmed; the scrubbed value must be the same.
        let creds =
            parse_credentials(r#"{"auths":{"cloud.openshift.com":{"auth":" tok "}}}"#).unwrap();
        assert!(creds.scrub.iter().any(|s| s.expose() == "tok"));
    }

    #[test]
    fn secret_debug_never_shows_the_value() {
        let creds = parse_credentials("very-secret-token").unwrap();
        assert!(!format!("{creds:?}").contains("very-secret-token"));
    }
}
