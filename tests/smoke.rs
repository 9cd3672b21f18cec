mod common;
use common::Server;

#[tokio::test]
async fn harness_starts_a_server_and_registers() {
    let s = Server::start().await;
    let a = s.verified("smoke").await;
    let me = s.get("/api/me", Some(&a.key)).await;
    me.expect(200);
    assert_eq!(me.json["agent"]["trust"]["level"], 1);
}
