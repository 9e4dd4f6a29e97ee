//! The secret shapes the redactor covers, each planted in a line as a host
//! shows it: the checklist taken from gitleaks' default rules,
//! detect-secrets' plugins and sos report's cleaner, kept to what a host's
//! journal, unit files, pod logs or command lines can hold
//! (docs/security.md, "Secret shapes"). The unit test
//! (`shapes::tests::catalogue_shapes_are_redacted`) and the end-to-end
//! planting test (tests/it/secrets.rs) plant every one; each planted value
//! starts with `PLANTED`, which no output may hold.

/// The catalogue (docs/security.md, "Secret shapes"): each shape of
/// gitleaks' default rules, detect-secrets' plugins and sos report's
/// cleaner that a host's journal, unit files, pod logs or command lines
/// can hold, planted in a line; the planted value (`PLANTED…`) must go,
/// what names it stay.
pub const CATALOGUE: &[(&str, &str)] = &[
    (
        "podman creds",
        "podman pull --creds bob:PLANTEDpw1 quay.io/x",
    ),
    (
        "skopeo src-creds",
        "skopeo copy --src-creds=bob:PLANTEDpw2 --dest-creds bob:PLANTEDpw3 a b",
    ),
    (
        "curl -u",
        "curl -sS -u admin:PLANTEDpw4 https://bmc/redfish",
    ),
    ("curl --user", "curl --user admin:PLANTEDpw5 https://x"),
    (
        "wget --password",
        "wget --user=bob --password=PLANTEDpw6 https://x",
    ),
    (
        "wget --http-password",
        "wget --http-password PLANTEDpw7 https://x",
    ),
    (
        "ipmitool -P",
        "ipmitool -I lanplus -H bmc -U root -P PLANTEDpw8 power on",
    ),
    (
        "ldapsearch -w",
        "ldapsearch -x -D cn=admin -w PLANTEDpw9 -b dc=x",
    ),
    ("mysql -pPW", "mysql -uroot -pPLANTEDpw10 -h db"),
    ("psql URL", "psql postgresql://app:PLANTEDpw11@db:5432/app"),
    ("PGPASSWORD", "env PGPASSWORD=PLANTEDpw12 psql -h db"),
    (
        "oc --token",
        "oc login --token=PLANTEDtok13 https://api:6443",
    ),
    ("kubectl --token", "kubectl --token PLANTEDtok14 get pods"),
    (
        "htpasswd -b",
        "htpasswd -bB /etc/htpasswd admin PLANTEDpw15",
    ),
    ("htpasswd -nb", "htpasswd -nbB admin PLANTEDpw16"),
    (
        "URL credentials",
        "git clone ssh://git:PLANTEDpw17@host/repo.git",
    ),
    ("sshpass -p", "sshpass -p PLANTEDpw18 ssh core@x"),
    (
        "PEM private key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\\nPLANTEDkey19\\n-----END OPENSSH PRIVATE KEY-----",
    ),
    ("kubeconfig client key", "    client-key-data: PLANTEDkey20"),
    ("kubeconfig token", "    token: PLANTEDtok21"),
    ("AWS key id", "aws_access_key_id = AKIAPLANTED234567ABC"),
    ("AWS secret", "aws_secret_access_key = PLANTEDsecret22"),
    (
        "GCP private key",
        "{\"type\":\"service_account\",\"private_key\":\"PLANTEDkey23\"}",
    ),
    (
        "Azure account key",
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=PLANTEDkey24;EndpointSuffix=core",
    ),
    ("Azure client secret", "AZURE_CLIENT_SECRET=PLANTEDsecret25"),
    ("private_key =", "private_key = PLANTEDkey26"),
    ("privateKey JSON", "{\"privateKey\": \"PLANTEDkey27\"}"),
    (
        "password JSON escaped",
        "msg=\"{\\\"password\\\":\\\"PLANTEDpw28\\\"}\"",
    ),
    (
        "password JSON doubly escaped",
        "log=\"{\\\"m\\\":\\\"{\\\\\\\"password\\\\\\\":\\\\\\\"PLANTEDpw29\\\\\\\"}\\\"}\"",
    ),
    ("YAML SCREAMING_SNAKE", "  DB_PASSWORD: PLANTEDpw30"),
    ("YAML camelCase", "  clientSecret: PLANTEDsecret31"),
    ("bearer", "Authorization: Bearer PLANTEDtok32abcdefgh"),
    ("cookie", "Cookie: session=PLANTEDtok33"),
    ("x-api-key", "X-Api-Key: PLANTEDkey34"),
    (
        "registry auths",
        "{\"auths\":{\"quay.io\":{\"auth\":\"PLANTEDauth35\"}}}",
    ),
    ("NM psk", "802-11-wireless-security.psk=PLANTEDpsk36"),
    ("XML password", "<password>PLANTEDpw37</password>"),
    (
        "OpenShift token",
        "oc whoami -t: sha256~PLANTEDtok38abcdefghijklmnopqrstuvwxyz01234",
    ),
    ("Kubernetes TLS secret", "  tls.key: PLANTEDkey39"),
    (
        "Kubernetes ssh-auth secret",
        "  ssh-privatekey: PLANTEDkey41",
    ),
];
