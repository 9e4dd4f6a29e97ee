//! A private CA and a TLS front for the mock, generated per test: the mock
//! speaks plain HTTP, the front terminates TLS with the test's certificate
//! and forwards bytes, so the agent's TLS stack (directly or through a
//! proxy's CONNECT tunnel) is exercised as against a real service.

use std::net::SocketAddr;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
    SanType,
};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

/// A CA and a server certificate it signed for `localhost` and 127.0.0.1.
pub struct Pki {
    pub ca_pem: String,
    pub server_chain: Vec<CertificateDer<'static>>,
    pub server_key: PrivatePkcs8KeyDer<'static>,
}

pub fn make_pki(ca_name: &str) -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, ca_name);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();

    let mut leaf = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    leaf.subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    leaf.distinguished_name
        .push(DnType::CommonName, "assisted-service.test");
    let key = KeyPair::generate().unwrap();
    let cert = leaf.signed_by(&key, &ca).unwrap();
    Pki {
        ca_pem: ca.pem(),
        server_chain: vec![cert.der().clone()],
        server_key: PrivatePkcs8KeyDer::from(key.serialize_der()),
    }
}

/// Terminates TLS on an ephemeral loopback port and forwards to `backend`.
pub async fn tls_front(pki: &Pki, backend: SocketAddr) -> SocketAddr {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            pki.server_chain.clone(),
            PrivateKeyDer::Pkcs8(pki.server_key.clone_key()),
        )
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A refused handshake simply ends here: that is the point of
                // the wrong-CA test.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                if let Ok(mut upstream) = TcpStream::connect(backend).await {
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut upstream).await;
                }
            });
        }
    });
    addr
}
