#![no_main]
//! The streamed host-list parser (`api::host_list`): any bytes the service
//! (or a proxy in front of it) sends as a host list. Never panics; a host it
//! returns is the one asked for; the element cap is honoured; feeding the
//! same bytes through the chunk channel the client uses gives the same
//! answer as reading them directly.

use assisted_boot_reporter::api::host_list::{find_in_host_list, ChunkReader, HostListError};
use libfuzzer_sys::fuzz_target;
use uuid::Uuid;

/// The id the committed corpus uses for "our" host.
const ME: Uuid = Uuid::from_u128(0x2c7d_4e0a_8f9b_4d4e_9a55_0f1e_2d3c_4b5a);
const CAP: usize = 8;

fuzz_target!(|data: &[u8]| {
    let direct = find_in_host_list(data, ME, CAP);
    match &direct {
        Ok(scan) => {
            if let Some(host) = &scan.host {
                assert_eq!(host.id, ME);
            }
            if scan.host.is_none() {
                assert!(scan.elements <= CAP, "{} elements past the cap", scan.elements);
            }
        }
        Err(HostListError::TooManyHosts { looked_at }) => assert_eq!(*looked_at, CAP),
        Err(HostListError::Invalid(reason)) => assert!(!reason.is_empty()),
    }
    // The same bytes in uneven chunks through the channel.
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    let owned = data.to_vec();
    let feeder = std::thread::spawn(move || {
        let step = 1 + owned.first().map_or(0, |b| usize::from(*b % 7));
        for chunk in owned.chunks(step) {
            if tx.blocking_send(chunk.to_vec()).is_err() {
                break;
            }
        }
    });
    let chunked = find_in_host_list(ChunkReader::new(rx), ME, CAP);
    feeder.join().unwrap();
    match (&direct, &chunked) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.elements, b.elements);
            assert_eq!(a.host.as_ref().map(|h| h.id), b.host.as_ref().map(|h| h.id));
        }
        (Err(a), Err(b)) => assert_eq!(
            std::mem::discriminant(a),
            std::mem::discriminant(b)
        ),
        _ => panic!("direct {direct:?} and chunked {chunked:?} disagree"),
    }
});
