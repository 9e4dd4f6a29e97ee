//! The live HTML status page at `/`: clusters, hosts, stage histories and
//! uploaded bundles, for demos and for watching a test run by eye.

use std::fmt::Write as _;

use axum::extract::State;
use axum::response::Html;
use axum::routing::get;
use axum::Router;

use crate::model::{fmt_time, Host, Mode, Stage, World};
use crate::store::BundleMeta;
use crate::Shared;

pub fn router() -> Router<Shared> {
    Router::new().route("/", get(index))
}

async fn index(State(st): State<Shared>) -> Html<String> {
    let world = st.world.lock().unwrap();
    Html(render(&world, st.mode))
}

pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse;margin:.4em 0 1em}\
td,th{border:1px solid #bbb;padding:.25em .6em;text-align:left;vertical-align:top}\
th{background:#eee}.host{border:1px solid #999;border-radius:4px;padding:.6em 1em;margin:1em 0}\
.error{color:#b00}.installed{color:#070}small{color:#666}";

fn render(world: &World, mode: Mode) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"2\"><title>mock assisted-service</title>\
         <style>{STYLE}</style></head><body><h1>mock assisted-service</h1><p><small>mode: {}; \
         agent auth {}; user auth {}; refreshes every 2 s</small></p>",
        if mode == Mode::Upstream {
            "upstream-compat"
        } else {
            "enhanced (boot stages, host_boot logs)"
        },
        if world.agent_token.is_some() {
            "on"
        } else {
            "off"
        },
        if world.user_token.is_some() {
            "on"
        } else {
            "off"
        },
    );
    if world.clusters.is_empty() && world.hosts.is_empty() {
        h.push_str("<p>No state yet: seed with <code>POST /admin/seed</code>.</p>");
    }
    for c in &world.clusters {
        let _ = write!(
            h,
            "<h2>Cluster {} <small>{} &middot; OpenShift {}</small></h2>",
            escape(&c.name),
            c.id,
            escape(&c.openshift_version)
        );
        let cluster_bundles = world.bundles_of(c.id, None);
        if !cluster_bundles.is_empty() {
            h.push_str("<h3>Cluster-level logs</h3>");
            bundles_table(&mut h, c.id, None, &cluster_bundles);
        }
        for host in world.hosts.iter().filter(|x| x.cluster_id == Some(c.id)) {
            host_section(&mut h, world, host);
        }
    }
    let unbound: Vec<&Host> = world
        .hosts
        .iter()
        .filter(|x| x.cluster_id.is_none())
        .collect();
    if !unbound.is_empty() {
        h.push_str("<h2>Hosts without a cluster</h2>");
        for host in unbound {
            host_section(&mut h, world, host);
        }
    }
    h.push_str("</body></html>");
    h
}

fn host_section(h: &mut String, world: &World, host: &Host) {
    let name = if host.requested_hostname.is_empty() {
        host.id.to_string()
    } else {
        host.requested_hostname.clone()
    };
    let class = match host.status.as_str() {
        "error" => "error",
        "installed" => "installed",
        _ => "",
    };
    let _ = write!(
        h,
        "<div class=\"host\"><h3>{} <small>{}</small></h3><table>\
         <tr><th>role</th><td>{}{}{}</td></tr>\
         <tr><th>status</th><td class=\"{class}\">{}</td></tr>\
         <tr><th>current stage</th><td>{}</td></tr>\
         <tr><th>progress info</th><td>{}</td></tr></table>",
        escape(&name),
        host.id,
        host.role.as_str(),
        if host.bootstrap { " (bootstrap)" } else { "" },
        if host.single_node {
            " (single node)"
        } else {
            ""
        },
        escape(&host.status),
        host.current_stage.map_or("—", Stage::as_str),
        escape(&host.progress_info),
    );
    if !host.history.is_empty() {
        h.push_str("<table><tr><th>at</th><th>stage</th><th>progress info</th></tr>");
        for e in &host.history {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                fmt_time(e.at),
                escape(e.stage),
                escape(&e.progress_info)
            );
        }
        h.push_str("</table>");
    }
    if let Some(cluster_id) = host.cluster_id {
        let bundles = world.bundles_of(cluster_id, Some(host.id));
        if bundles.is_empty() {
            h.push_str("<p><small>No logs uploaded.</small></p>");
        } else {
            bundles_table(h, cluster_id, Some(host.id), &bundles);
        }
    }
    h.push_str("</div>");
}

fn bundles_table(
    h: &mut String,
    cluster_id: uuid::Uuid,
    host_id: Option<uuid::Uuid>,
    bundles: &[(&str, &BundleMeta)],
) {
    h.push_str(
        "<table><tr><th>logs</th><th>size</th><th>uploaded</th><th>uploads</th>\
         <th>gzip tar</th><th>members</th></tr>",
    );
    let host_seg = host_id.map_or_else(|| "cluster".to_owned(), |id| id.to_string());
    for (logs_type, meta) in bundles {
        let members = meta.members.len();
        let _ = write!(
            h,
            "<tr><td><a href=\"/admin/bundles/{cluster_id}/{host_seg}/{lt}\">{lt}</a></td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td title=\"{}\">{members}</td></tr>",
            meta.size,
            fmt_time(meta.uploaded_at),
            meta.uploads,
            if meta.valid { "valid" } else { "INVALID" },
            escape(&meta.members.join("\n")),
            lt = escape(logs_type),
        );
    }
    h.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seed::Seed;

    #[test]
    fn escapes_and_refreshes() {
        let seed: Seed = serde_json::from_str(
            r#"{"clusters":[{"id":"11111111-1111-1111-1111-111111111111","name":"<b>x</b>"}]}"#,
        )
        .unwrap();
        let page = render(&seed.into_world(Mode::Enhanced).unwrap(), Mode::Enhanced);
        assert!(page.contains("&lt;b&gt;x&lt;/b&gt;"));
        assert!(!page.contains("<b>x</b>"));
        assert!(page.contains(r#"<meta http-equiv="refresh" content="2">"#));
    }
}
