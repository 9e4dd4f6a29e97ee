//! Load on the mock assisted-service: N simulated agents at once, each doing
//! what the reporter does on a first boot (list its infra-env's hosts, set
//! its boot stage, upload a `host_boot` bundle), each with its own HTTP
//! client (its own connection, as separate hosts have).
//!
//!   mock-load seed --agents 1000 --hosts-per-cluster 50 -o seed.json
//!   mock-load run --base http://127.0.0.1:PORT --seed seed.json --bundle b.tar.gz
//!
//! `run` prints one JSON object: counts, errors (each kind once with a
//! count), latency percentiles per request and per agent, wall time.
//! Bounded: one attempt per request, a timeout per request and a deadline
//! for the whole run; agents still busy at the deadline count as errors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use serde_json::{json, Value};

const API: &str = "/api/assisted-install/v2";
const STAGE: &str = "Booted with local ignition";
const TOKEN: &str = "bench-agent-token-5f0c";

#[derive(Debug, Parser)]
#[command(about = "Simulated agents against the mock assisted-service")]
struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Write a mock seed with one host per agent, `--hosts-per-cluster` a cluster.
    Seed {
        #[arg(long)]
        agents: usize,
        #[arg(long, default_value_t = 50)]
        hosts_per_cluster: usize,
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Run one agent per host of the seed, all released at the same instant.
    Run {
        /// The mock's base URL (loopback).
        #[arg(long)]
        base: String,
        #[arg(long)]
        seed: PathBuf,
        /// The bundle every agent uploads.
        #[arg(long)]
        bundle: PathBuf,
        /// Time limit of one request, seconds.
        #[arg(long, default_value_t = 120)]
        request_timeout: u64,
        /// Time limit of the whole run, seconds.
        #[arg(long, default_value_t = 300)]
        deadline: u64,
        /// Each agent starts at a uniformly random offset in [0, SPREAD)
        /// seconds after the release (0: all at once).
        #[arg(long, default_value_t = 0.0)]
        spread: f64,
    },
}

/// Deterministic IDs, so that seeds and reports can be compared run to run.
fn id(kind: u16, n: usize) -> String {
    format!("{kind:08x}-0000-4000-8000-{n:012x}")
}

fn seed(agents: usize, per_cluster: usize) -> Value {
    let per_cluster = per_cluster.max(1);
    let clusters = agents.div_ceil(per_cluster);
    json!({
        "agent_token": TOKEN,
        "user_token": "bench-user-token",
        "clusters": (0..clusters).map(|c| json!({
            "id": id(1, c), "name": format!("bench-{c}"), "openshift_version": "4.18"
        })).collect::<Vec<_>>(),
        "infra_envs": (0..clusters).map(|c| json!({
            "id": id(2, c), "cluster_id": id(1, c), "name": format!("bench-{c}_infra-env")
        })).collect::<Vec<_>>(),
        "hosts": (0..agents).map(|h| {
            let c = h / per_cluster;
            json!({
                "id": id(3, h),
                "infra_env_id": id(2, c),
                "cluster_id": id(1, c),
                "requested_hostname": format!("node-{h}.bench-{c}.example.com"),
                "role": if h % per_cluster < 3 { "master" } else { "worker" },
                "bootstrap": h % per_cluster == 0,
                "single_node": false,
                "status": "installing-in-progress",
                "current_stage": "Rebooting",
                "progress_info": ""
            })
        }).collect::<Vec<_>>()
    })
}

struct Host {
    id: String,
    infra_env_id: String,
    cluster_id: String,
}

fn hosts(seed: &Value) -> Vec<Host> {
    seed["hosts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| Host {
            id: h["id"].as_str().unwrap_or_default().to_owned(),
            infra_env_id: h["infra_env_id"].as_str().unwrap_or_default().to_owned(),
            cluster_id: h["cluster_id"].as_str().unwrap_or_default().to_owned(),
        })
        .collect()
}

#[derive(Default)]
struct AgentResult {
    /// Per request kind: latency, or the error.
    requests: Vec<(&'static str, Result<Duration, String>)>,
    total: Option<Duration>,
}

async fn timed(kind: &'static str, req: reqwest::RequestBuilder, result: &mut AgentResult) -> bool {
    let start = Instant::now();
    let outcome = match req.send().await {
        Ok(resp) => {
            let status = resp.status();
            // The whole body, so the latency covers the answer too.
            match resp.bytes().await {
                Ok(_) if status.is_success() => Ok(start.elapsed()),
                Ok(_) => Err(format!("{kind}: HTTP {status}")),
                Err(err) => Err(format!("{kind}: reading the answer: {err}")),
            }
        }
        Err(err) if err.is_timeout() => Err(format!("{kind}: timeout")),
        Err(err) if err.is_connect() => Err(format!("{kind}: connect failed")),
        Err(err) => Err(format!("{kind}: {err}")),
    };
    let ok = outcome.is_ok();
    result.requests.push((kind, outcome));
    ok
}

#[allow(clippy::disallowed_methods)] // the mock on loopback, by address: no name to resolve
async fn agent(
    base: Arc<str>,
    host: Host,
    bundle: &'static [u8],
    request_timeout: Duration,
    go: Arc<tokio::sync::Barrier>,
    offset: Duration,
) -> AgentResult {
    let mut result = AgentResult::default();
    let client = match reqwest::Client::builder()
        .timeout(request_timeout)
        .pool_max_idle_per_host(1)
        .build()
    {
        Ok(client) => client,
        Err(err) => {
            result
                .requests
                .push(("client", Err(format!("building the client: {err}"))));
            return result;
        }
    };
    go.wait().await;
    tokio::time::sleep(offset).await;
    let start = Instant::now();
    let list = client
        .get(format!(
            "{base}{API}/infra-envs/{}/hosts",
            host.infra_env_id
        ))
        .header("X-Secret-Key", TOKEN);
    if !timed("list-hosts", list, &mut result).await {
        return result;
    }
    let stage = client
        .put(format!(
            "{base}{API}/infra-envs/{}/hosts/{}/progress",
            host.infra_env_id, host.id
        ))
        .header("X-Secret-Key", TOKEN)
        .header("Content-Type", "application/json")
        .body(json!({"current_stage": STAGE, "progress_info": ""}).to_string());
    if !timed("set-stage", stage, &mut result).await {
        return result;
    }
    let part = reqwest::multipart::Part::bytes(bundle)
        .file_name("host_boot.tar.gz")
        .mime_str("application/gzip")
        .expect("static MIME type parses");
    let upload = client
        .post(format!(
            "{base}{API}/clusters/{}/logs?logs_type=host_boot&host_id={}&infra_env_id={}",
            host.cluster_id, host.id, host.infra_env_id
        ))
        .header("X-Secret-Key", TOKEN)
        .multipart(reqwest::multipart::Form::new().part("upfile", part));
    if timed("upload", upload, &mut result).await {
        result.total = Some(start.elapsed());
    }
    result
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    // Nearest rank.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64()
}

fn summary(latencies: &mut [Duration]) -> Value {
    latencies.sort();
    json!({
        "count": latencies.len(),
        "p50_s": percentile(latencies, 50.0),
        "p90_s": percentile(latencies, 90.0),
        "p99_s": percentile(latencies, 99.0),
        "max_s": latencies.last().map_or(f64::NAN, Duration::as_secs_f64),
    })
}

async fn run(
    base: String,
    seed_path: PathBuf,
    bundle_path: PathBuf,
    request_timeout: Duration,
    deadline: Duration,
    spread: f64,
) -> anyhow::Result<Value> {
    let seed: Value = serde_json::from_str(
        &std::fs::read_to_string(&seed_path)
            .with_context(|| format!("reading {}", seed_path.display()))?,
    )
    .with_context(|| format!("parsing {}", seed_path.display()))?;
    let bundle = std::fs::read(&bundle_path)
        .with_context(|| format!("reading {}", bundle_path.display()))?;
    // Shared by every agent without a copy each; lives until the process ends.
    let bundle: &'static [u8] = Vec::leak(bundle);
    let hosts = hosts(&seed);
    let agents = hosts.len();
    let base: Arc<str> = Arc::from(base.trim_end_matches('/'));
    // Every agent builds its client first, then all start at once.
    let go = Arc::new(tokio::sync::Barrier::new(agents + 1));
    let mut tasks = tokio::task::JoinSet::new();
    let mut rng = fastrand::Rng::with_seed(7);
    for host in hosts {
        let offset = Duration::from_secs_f64(spread.max(0.0) * rng.f64());
        tasks.spawn(agent(
            Arc::clone(&base),
            host,
            bundle,
            request_timeout,
            Arc::clone(&go),
            offset,
        ));
    }
    go.wait().await;
    let start = Instant::now();
    let mut per_kind: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    let mut totals = Vec::new();
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    let mut finished = 0;
    let stop = tokio::time::sleep(deadline);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            joined = tasks.join_next() => {
                let Some(joined) = joined else { break };
                finished += 1;
                let result = joined.unwrap_or_else(|err| AgentResult {
                    requests: vec![("task", Err(format!("agent task failed: {err}")))],
                    total: None,
                });
                for (kind, outcome) in result.requests {
                    match outcome {
                        Ok(latency) => per_kind.entry(kind).or_default().push(latency),
                        Err(err) => *errors.entry(err).or_default() += 1,
                    }
                }
                totals.extend(result.total);
            }
            () = &mut stop => {
                tasks.abort_all();
                break;
            }
        }
    }
    let wall = start.elapsed();
    let unfinished = agents - finished;
    if unfinished > 0 {
        *errors
            .entry(format!(
                "agent unfinished at the {}s deadline",
                deadline.as_secs()
            ))
            .or_default() += unfinished;
    }
    let error_count: usize = errors.values().sum();
    let uploaded_bytes = bundle.len() as u64 * totals.len() as u64;
    Ok(json!({
        "agents": agents,
        "spread_s": spread,
        "completed_agents": totals.len(),
        "errors": error_count,
        "error_kinds": errors,
        "bundle_bytes": bundle.len(),
        "uploaded_bytes": uploaded_bytes,
        "wall_s": wall.as_secs_f64(),
        "agent_total": summary(&mut totals),
        "requests": per_kind.iter_mut().map(|(k, v)| ((*k).to_owned(), summary(v))).collect::<serde_json::Map<_, _>>(),
    }))
}

fn main() -> anyhow::Result<()> {
    match Args::parse().command {
        Cmd::Seed {
            agents,
            hosts_per_cluster,
            output,
        } => {
            let text = serde_json::to_string_pretty(&seed(agents, hosts_per_cluster))?;
            std::fs::write(&output, text).with_context(|| format!("writing {}", output.display()))
        }
        Cmd::Run {
            base,
            seed,
            bundle,
            request_timeout,
            deadline,
            spread,
        } => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            let report = runtime.block_on(run(
                base,
                seed,
                bundle,
                Duration::from_secs(request_timeout),
                Duration::from_secs(deadline),
                spread,
            ))?;
            println!("{report}");
            Ok(())
        }
    }
}
