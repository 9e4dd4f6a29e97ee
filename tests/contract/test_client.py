"""The official `assisted-service-client` (generated from the real API
definition) against the mock: if it cannot talk to the mock, the mock is
wrong. Every body is deserialized into the client's own models, error
bodies included."""

import io
import json
import tarfile

import pytest

import assisted_service_client as asc
from assisted_service_client import models
from assisted_service_client.rest import ApiException

NEW_STAGES = ["Booted with local ignition", "Booted with control plane ignition"]


class _Body:
    """What `ApiClient.deserialize` reads from a response."""

    def __init__(self, data):
        self.data = data


def error_model(client: asc.InstallerApi, exc: ApiException, model: str, content_type="application/json"):
    """The error body deserialized by the client's own machinery. Upstream
    negotiates the error's content type from the request's Accept: a
    download (octet-stream) gets its error as octet-stream, JSON inside."""
    assert exc.headers.get("Content-Type", "").startswith(content_type), exc.headers
    return client.api_client.deserialize(_Body(exc.body), model)


def validation_error(exc: ApiException) -> dict:
    """go-swagger's own parameter-validation body, which the API definition
    does not model: `{"code": <int>, "message": <str>}`."""
    body = json.loads(exc.body)
    assert set(body) == {"code", "message"} and isinstance(body["code"], int), body
    return body


def host_boot_bundle(path, marker: bytes) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in [("host_boot/marker.txt", marker), ("host_boot/manifest.json", b"{}")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def host_models(client: asc.InstallerApi, listed) -> list:
    """The generator leaves `host-list` (an array) without a model, so list
    endpoints return plain dicts; each goes through the `Host` model here,
    with its required-field and enum checks."""
    assert isinstance(listed, list)
    return client.api_client.deserialize(_Body(json.dumps(listed)), "list[Host]")


def test_list_hosts_deserializes_into_host_models(fresh):
    for client in (fresh.agent_client(), fresh.user_client()):
        hosts = host_models(client, client.v2_list_hosts(fresh.infra_env_id))
        assert len(hosts) == 3
        for h in hosts:
            assert isinstance(h, models.Host)
            assert isinstance(h.progress, models.HostProgressInfo)
            assert h.kind == "Host"
            assert h.infra_env_id == fresh.infra_env_id
        master0 = next(h for h in hosts if h.requested_hostname.startswith("master-0"))
        assert master0.progress.current_stage == "Rebooting"
        assert master0.bootstrap is True
        # The role's list with the enhancement's stages in place.
        assert master0.progress_stages[7:11] == [
            "Rebooting", "Booted with local ignition", "Configuring", "Booted with control plane ignition"
        ]
    agent = fresh.agent_client()
    cluster_hosts = host_models(agent, agent.list_cluster_hosts(fresh.cluster_id))
    assert sorted(h.id for h in cluster_hosts) == sorted(h["id"] for h in fresh.seed["hosts"])


def test_auth_settings_are_enforced_per_endpoint(fresh):
    with pytest.raises(ApiException) as bad_key:
        fresh.client(agent_key="not-the-token").v2_list_hosts(fresh.infra_env_id)
    assert bad_key.value.status == 401
    err = error_model(fresh.agent_client(), bad_key.value, "InfraError")
    assert isinstance(err, models.InfraError) and err.code == 401
    # pkg/auth/local_authenticator.go: the key is not a JWT.
    assert err.message.startswith("Failed to parse token: "), err.message

    # Reading one host is for users only: the client does not even send its
    # agent key there (userAuth is the operation's only scheme).
    master0 = fresh.host_id("master-0")
    with pytest.raises(ApiException) as agent_get:
        fresh.agent_client().v2_get_host(fresh.infra_env_id, master0)
    assert agent_get.value.status == 401
    # go-openapi's errors/api.go, when no scheme of the operation applies.
    assert error_model(fresh.agent_client(), agent_get.value, "InfraError").message == (
        "unauthenticated for invalid credentials"
    )
    host = fresh.user_client().v2_get_host(fresh.infra_env_id, master0)
    assert isinstance(host, models.Host) and host.id == master0


def test_progress_updates_and_refused_moves(fresh):
    agent = fresh.agent_client()
    ie, master0 = fresh.infra_env_id, fresh.host_id("master-0")
    assert agent.v2_update_host_install_progress(
        ie, master0, models.HostProgress(current_stage=NEW_STAGES[0], progress_info="boot 1 of 2")
    ) is None
    host = fresh.user_client().v2_get_host(ie, master0)
    assert (host.progress.current_stage, host.progress.progress_info) == (NEW_STAGES[0], "boot 1 of 2")
    assert host.status == "installing-in-progress" and host.status_info == NEW_STAGES[0]
    assert host.progress.installation_percentage == 69

    # Backwards: 409 with the service's exact reason in an `error` body.
    with pytest.raises(ApiException) as back:
        agent.v2_update_host_install_progress(ie, master0, models.HostProgress(current_stage="Rebooting"))
    assert back.value.status == 409
    err = error_model(agent, back.value, "Error")
    assert isinstance(err, models.Error)
    assert (err.code, err.id, err.kind) == ("409", 409, "Error")
    assert err.reason == (
        "Can't assign lower stage \"Rebooting\" after host has been in stage \"Booted with local ignition\""
    )

    # A stage outside the role's list (workers only) is refused the same way.
    with pytest.raises(ApiException) as off_list:
        agent.v2_update_host_install_progress(ie, master0, models.HostProgress(current_stage="Waiting for ignition"))
    assert off_list.value.status == 409
    assert "isn't available for host role master" in error_model(agent, off_list.value, "Error").reason

    # Not installing any more: stage changes are refused, new info is not.
    fresh.admin(f"/admin/hosts/{master0}/stage", {"current_stage": "Done"})
    with pytest.raises(ApiException) as done:
        agent.v2_update_host_install_progress(ie, master0, models.HostProgress(current_stage="Failed"))
    assert done.value.status == 409
    assert error_model(agent, done.value, "Error").reason == "Can't set progress <Failed> to host in status <installed>"
    agent.v2_update_host_install_progress(ie, master0, models.HostProgress(current_stage="Done", progress_info="late"))

    # A stage this API does not know: go-swagger's enum validation.
    with pytest.raises(ApiException) as unknown:
        agent.v2_update_host_install_progress(ie, master0, models.HostProgress(current_stage="Booted twice"))
    assert unknown.value.status == 400
    assert validation_error(unknown.value)["message"].startswith("current_stage in body should be one of [")

    # Unknown host: 404 `error`.
    with pytest.raises(ApiException) as missing:
        agent.v2_update_host_install_progress(
            ie, "00000000-0000-4000-8000-000000000000", models.HostProgress(current_stage="Rebooting")
        )
    assert missing.value.status == 404
    assert error_model(agent, missing.value, "Error").code == "404"


def test_upload_then_download_logs(fresh, tmp_path):
    agent = fresh.agent_client()
    cluster, ie, master0 = fresh.cluster_id, fresh.infra_env_id, fresh.host_id("master-0")
    first, second = tmp_path / "first.tar.gz", tmp_path / "second.tar.gz"
    host_boot_bundle(first, b"one")
    host_boot_bundle(second, b"two")
    assert agent.v2_upload_logs(cluster, "host_boot", upfile=str(first), host_id=master0, infra_env_id=ie) is None
    # Each upload is complete and replaces the previous one of its type.
    agent.v2_upload_logs(cluster, "host_boot", upfile=str(second), host_id=master0, infra_env_id=ie)

    # The generated client decodes every preloaded body as UTF-8, which a
    # tar.gz is not; its users (and assisted-test-infra) download with
    # `_preload_content=False` and read the raw response.
    resp = fresh.user_client().v2_download_cluster_logs(
        cluster, logs_type="host_boot", host_id=master0, _preload_content=False
    )
    assert resp.status == 200
    assert resp.headers["Content-Type"] == "application/octet-stream"
    # Named as upstream's `PrepareHostLogFile` names boot logs:
    # <cluster>_<role, bootstrap for the bootstrap host>_boot_<hostname>.
    assert resp.headers["Content-Disposition"] == "attachment; filename=demo_bootstrap_boot_master-0.demo.example.com.tar.gz"
    assert resp.data == second.read_bytes()
    # urlAuth: the api_key query parameter download links carry.
    by_url = fresh.client(url_key=fresh.seed["user_token"]).v2_download_cluster_logs(
        cluster, logs_type="host_boot", host_id=master0, _preload_content=False
    )
    assert by_url.data == second.read_bytes()

    state = fresh.admin("/admin/state")
    bundle = next(h for h in state["hosts"] if h["id"] == master0)["bundles"][0]
    assert (bundle["logs_type"], bundle["uploads"], bundle["valid"]) == ("host_boot", 2, True)

    # Downloads are for users: the agent key is refused.
    with pytest.raises(ApiException) as agent_dl:
        agent.v2_download_cluster_logs(cluster, logs_type="host_boot", host_id=master0)
    assert agent_dl.value.status == 401
    error_model(agent, agent_dl.value, "InfraError")
    # No host logs uploaded (logs_collected_at unset): 409 `error`, as
    # upstream's getLogFileForDownload answers.
    with pytest.raises(ApiException) as none:
        fresh.user_client().v2_download_cluster_logs(cluster, logs_type="host", host_id=master0)
    assert none.value.status == 409
    # The handler's own error on a download (octet-stream asked): upstream
    # writes it as octet-stream, JSON inside.
    assert error_model(agent, none.value, "Error", "application/octet-stream").reason == (
        f"Logs for host {master0} were not found"
    )
    # A logs type nobody defines.
    with pytest.raises(ApiException) as bad_type:
        agent.v2_upload_logs(cluster, "node-boot", upfile=str(first), host_id=master0, infra_env_id=ie)
    assert validation_error(bad_type.value) == {
        "code": 400,
        "message": "logs_type in query should be one of [host controller host_boot]",
    }


def test_upstream_compat_mock_refuses_the_enhancement(upstream_mock, tmp_path):
    upstream_mock.reseed()
    agent = upstream_mock.agent_client()
    ie, master0 = upstream_mock.infra_env_id, upstream_mock.host_id("master-0")
    hosts = host_models(agent, agent.v2_list_hosts(ie))
    assert all(not set(NEW_STAGES) & set(h.progress_stages) for h in hosts)
    with pytest.raises(ApiException) as stage:
        agent.v2_update_host_install_progress(ie, master0, models.HostProgress(current_stage=NEW_STAGES[0]))
    assert stage.value.status == 400
    assert "Booted" not in validation_error(stage.value)["message"]
    # The reporter's fallback: same stage, new progress_info.
    agent.v2_update_host_install_progress(
        ie, master0, models.HostProgress(current_stage="Rebooting", progress_info="Booted with local ignition")
    )
    assert host_models(agent, agent.v2_list_hosts(ie))[0].progress.progress_info == "Booted with local ignition"
    bundle = tmp_path / "b.tar.gz"
    host_boot_bundle(bundle, b"x")
    with pytest.raises(ApiException) as logs:
        agent.v2_upload_logs(upstream_mock.cluster_id, "host_boot", upfile=str(bundle), host_id=master0)
    assert validation_error(logs.value)["message"] == "logs_type in query should be one of [host controller]"
