mod common;
use common::*;
use std::time::Duration;
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[should_panic(expected = "did not exit within the hard deadline")]
async fn deadline_kills() {
    let sc = Scenario::new("probe");
    sc.write_config("http://127.0.0.1:9", SecretForm::PullSecretJson, true);
    let _ = sc.run_agent("probe", &AgentOpts { deadline: Duration::from_secs(2), timeout: Some("60s"), ..AgentOpts::default() }).await;
}
