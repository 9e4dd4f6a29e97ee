//! `proxy.env`: the forward proxy the host's installer uses, in the format of
//! a unit's `EnvironmentFile=`. Mode 0600: a proxy URL may hold a password,
//! so no error here quotes a value.

/// The three settings of `proxy.env`, as written (checked by `config`).
#[derive(Debug, Default)]
pub(crate) struct ProxyEnv {
    pub(crate) http: Option<String>,
    pub(crate) https: Option<String>,
    pub(crate) no_proxy: Option<String>,
}

/// `proxy.env`: `KEY=VALUE` lines like `reporter.conf`, so it also serves as
/// a unit's `EnvironmentFile=`. Errors quote no value.
pub(crate) fn parse(text: &str) -> Result<ProxyEnv, String> {
    let mut file = ProxyEnv::default();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line_no = number + 1;
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| format!("line {line_no}: expected KEY=VALUE"))?;
        let slot = match key.trim() {
            "HTTP_PROXY" | "http_proxy" => &mut file.http,
            "HTTPS_PROXY" | "https_proxy" => &mut file.https,
            "NO_PROXY" | "no_proxy" => &mut file.no_proxy,
            other => {
                let shown = if other
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    format!(" {other:?}")
                } else {
                    String::new()
                };
                return Err(format!(
                    "line {line_no}: unknown key{shown}; expected HTTP_PROXY, HTTPS_PROXY or NO_PROXY"
                ));
            }
        };
        *slot = Some(value.trim().trim_matches('"').to_owned());
    }
    Ok(file)
}
