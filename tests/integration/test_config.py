"""``svc:/Config.pkl`` evaluated by the real Pkl into the typed Python objects."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from svc.config import ConfigError, cli_config, load_cli_config, load_config, load_defaults
from svc.config.model import (
    DiscoveryFilter,
    FilterCondition,
    LabelConfig,
    RateLimitConfig,
    RetryConfig,
)


def test_defaults() -> None:
    config = load_defaults()
    agent, cli = config.agent, config.cli
    assert agent.server.port == 49684
    assert agent.server.bind_address == "0.0.0.0"
    assert agent.server.tls_cert is None and agent.server.tls_key is None
    assert agent.datastore.datastore_type == "sqlite"
    assert agent.datastore.sqlite.file_path == "~/.local/share/svc/data/svc.db"
    assert agent.datastore.postgres.port == 5432
    assert agent.datastore.postgres.connection_params == ""
    assert agent.datastore.aurora_data_api.cluster_arn == ""
    assert agent.resource_plugins == ()
    assert agent.retry == RetryConfig(status_check_interval=timedelta(seconds=20), max_retries=9,
                                      retry_delay=timedelta(seconds=10))
    assert agent.synchronization.enabled and agent.synchronization.interval == timedelta(minutes=5)
    assert agent.discovery.enabled and agent.discovery.interval == timedelta(minutes=10)
    assert agent.discovery.label_tag_keys == ("Name",)
    assert agent.logging.file_log_level == "debug" and agent.logging.console_log_level == "info"
    assert agent.o_tel.enabled is False and agent.o_tel.otlp.protocol == "grpc"
    assert agent.stack_expirer.interval == timedelta(seconds=5)
    assert agent.auth is None
    assert cli.api.url == "http://localhost" and cli.api.port == 49684
    assert cli.auth is None
    assert cli.upgrade.index_url is None and cli.upgrade.find_links == ()  # svc upgrade: where svc came from


def test_cli_config_defaults_without_a_file(home: Path) -> None:
    assert load_cli_config(None).cli.api.base_url == "http://localhost:49684"


def test_cli_config_is_read_from_the_user_config_dir(home: Path) -> None:
    path = home / ".config" / "svc" / "svc.conf.pkl"
    path.parent.mkdir(parents=True)
    path.write_text('amends "svc:/Config.pkl"\ncli { api { url = "https://svc.example.com"; port = 443 } }\n')
    assert load_cli_config(None).cli.api.base_url == "https://svc.example.com:443"


def test_the_cli_reads_its_block_with_the_environment_applied(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = home / ".config" / "svc" / "svc.conf.pkl"
    path.parent.mkdir(parents=True)
    path.write_text('amends "svc:/Config.pkl"\ncli { api { url = "https://svc.example.com"; port = 443 } }\n')
    assert cli_config(None) == load_cli_config(None).cli
    monkeypatch.setenv("SVC_API_PORT", "8443")
    assert cli_config(None).api.base_url == "https://svc.example.com:8443"
    assert cli_config(path).api.base_url == "https://svc.example.com:8443"


def test_the_cli_reads_its_block_without_the_agent_models_or_pydantic(tmp_path: Path) -> None:
    """A CLI command decodes the ``cli`` block only, as msgspec structs: the agent's models are not defined and
    pydantic is not imported (which saved first a tenth, then a third of a short command's CPU)."""
    config = tmp_path / "svc.conf.pkl"
    config.write_text('amends "svc:/Config.pkl"\ncli { api { port = 1234 } }\n')
    probe = ("import sys; from pathlib import Path; from svc.config import cli_config; "
             f"print(cli_config(Path({str(config)!r})).api.port, 'svc.config.model' in sys.modules, "
             "'pydantic' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1234", "False", "False"]


def test_the_cli_refuses_a_file_that_does_not_amend_the_config(write_pkl) -> None:
    path = write_pkl("other.pkl", 'x = 1\noutput { renderer = new JsonRenderer {} }\n')
    with pytest.raises(ConfigError, match='amends "svc:/Config.pkl"'):
        cli_config(path)


HASH = "$2b$12$" + "a" * 53

EVERY_FIELD = """
amends "svc:/Config.pkl"

agent {
  server { bindAddress = "127.0.0.1"; port = 1234; tlsCert = "/tls/cert.pem"; tlsKey = "/tls/key.pem" }
  datastore {
    datastoreType = "postgres"
    sqlite { filePath = "/data/svc.db" }
    postgres {
      host = "db.example.com"; port = 6543; user = "agent"; password = "<DB_PASSWORD>"; database = "state"
      schema = "svc"; connectionParams = "sslmode=verify-full&sslrootcert=/certs/global-bundle.pem"
    }
    auroraDataAPI {
      clusterArn = "arn:aws:rds:us-east-1:123456789012:cluster:svc"
      secretArn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:svc-db"
      database = "svc"; region = "us-east-1"; endpoint = "http://127.0.0.1:9999"
    }
  }
  resourcePlugins {
    new Config.BaseResourcePluginConfig {
      type = "AWS"
      enabled = false
      rateLimit { maxRequestsPerSecondForNamespace = 3 }
      labelConfig { defaultQuery = "$.Tags[?(@.Key=='Name')].Value"; resourceOverrides { ["AWS::S3::Bucket"] = "$.BucketName" } }
      discoveryFilters {
        new {
          resourceTypes { "AWS::EC2::VPC" "AWS::EC2::Subnet" }
          conditions { new { propertyPath = "$.Tags[?(@.Key=='svc:agent')].Value"; propertyValue = "true" } }
        }
        new {
          resourceTypes { "AWS::ECS::Cluster" }
          conditions { new { propertyPath = "$.Tags[?(@.Key=='AmazonECSManaged')].Value"; propertyValue = "true" } }
        }
      }
      resourceTypesToDiscover { "AWS::EC2::VPC" }
      retry { statusCheckInterval = 2.s; maxRetries = 1; retryDelay = 500.ms }
    }
  }
  retry { statusCheckInterval = 5.s; maxRetries = 3; retryDelay = 9.s }
  synchronization { enabled = false; interval = 1.h }
  discovery { enabled = false; interval = 20.min; labelTagKeys = new Listing { "Name" "Environment" } }
  logging { filePath = "/var/log/svc.log"; fileLogLevel = "warn"; consoleLogLevel = "error" }
  oTel {
    enabled = true; serviceName = "agent-7"
    otlp { enabled = false; endpoint = "http://collector:4318"; protocol = "http"; insecure = false; temporality = "cumulative" }
    prometheus { enabled = false }
  }
  stackExpirer { enabled = false; interval = 1.min }
  auth { type = "basic"; authorizedUsers { new { username = "ops"; password = "HASH" } } }
}

cli {
  api { url = "https://svc.example.com"; port = 443 }
  auth { type = "basic"; username = "ops"; password = "s3cret" }
}
""".replace("HASH", HASH)

# Pkl's `import` must come before members; the module is imported under its own name.
EVERY_FIELD = EVERY_FIELD.replace('amends "svc:/Config.pkl"\n', 'amends "svc:/Config.pkl"\nimport "svc:/Config.pkl"\n')


def test_every_field_round_trips(write_pkl) -> None:
    config = load_config(write_pkl("every.pkl", EVERY_FIELD))
    agent = config.agent
    assert (agent.server.bind_address, agent.server.port) == ("127.0.0.1", 1234)
    assert (agent.server.tls_cert, agent.server.tls_key) == ("/tls/cert.pem", "/tls/key.pem")
    assert agent.server.tls_enabled
    store = agent.datastore
    assert store.datastore_type == "postgres"
    assert store.sqlite.file_path == "/data/svc.db"
    pg = store.postgres
    assert (pg.host, pg.port, pg.user, pg.password, pg.database, pg.schema_) == (
        "db.example.com", 6543, "agent", "<DB_PASSWORD>", "state", "svc")
    assert pg.connection_params == "sslmode=verify-full&sslrootcert=/certs/global-bundle.pem"
    aurora = store.aurora_data_api
    assert aurora.cluster_arn.endswith(":cluster:svc") and aurora.secret_arn.endswith(":secret:svc-db")
    assert (aurora.database, aurora.region, aurora.endpoint) == ("svc", "us-east-1", "http://127.0.0.1:9999")
    (plugin,) = agent.resource_plugins
    assert plugin.type == "AWS" and plugin.enabled is False
    assert plugin.rate_limit == RateLimitConfig(scope="Namespace", max_requests_per_second_for_namespace=3)
    assert plugin.label_config == LabelConfig(default_query="$.Tags[?(@.Key=='Name')].Value",
                                              resource_overrides={"AWS::S3::Bucket": "$.BucketName"})
    assert plugin.discovery_filters == (
        DiscoveryFilter(resource_types=("AWS::EC2::VPC", "AWS::EC2::Subnet"), conditions=(
            FilterCondition(property_path="$.Tags[?(@.Key=='svc:agent')].Value", property_value="true"),)),
        DiscoveryFilter(resource_types=("AWS::ECS::Cluster",), conditions=(
            FilterCondition(property_path="$.Tags[?(@.Key=='AmazonECSManaged')].Value", property_value="true"),)),
    )
    assert plugin.resource_types_to_discover == ("AWS::EC2::VPC",)
    assert plugin.retry == RetryConfig(status_check_interval=timedelta(seconds=2), max_retries=1,
                                       retry_delay=timedelta(milliseconds=500))
    assert plugin.settings == {}
    assert agent.retry == RetryConfig(status_check_interval=timedelta(seconds=5), max_retries=3,
                                      retry_delay=timedelta(seconds=9))
    assert not agent.synchronization.enabled and agent.synchronization.interval == timedelta(hours=1)
    assert not agent.discovery.enabled and agent.discovery.interval == timedelta(minutes=20)
    assert agent.discovery.label_tag_keys == ("Name", "Environment")
    assert (agent.logging.file_path, agent.logging.file_log_level, agent.logging.console_log_level) == (
        "/var/log/svc.log", "warn", "error")
    otel = agent.o_tel
    assert otel.enabled and otel.service_name == "agent-7" and not otel.prometheus.enabled
    assert (otel.otlp.enabled, otel.otlp.endpoint, otel.otlp.protocol, otel.otlp.insecure, otel.otlp.temporality) == (
        False, "http://collector:4318", "http", False, "cumulative")
    assert not agent.stack_expirer.enabled and agent.stack_expirer.interval == timedelta(minutes=1)
    assert agent.auth is not None and agent.auth.type == "basic"
    assert [(u.username, u.password) for u in agent.auth.authorized_users] == [("ops", HASH)]
    cli = config.cli
    assert cli.api.base_url == "https://svc.example.com:443"
    assert cli.auth is not None and (cli.auth.username, cli.auth.password) == ("ops", "s3cret")


def test_secrets_stay_out_of_reprs(write_pkl) -> None:
    config = load_config(write_pkl("every.pkl", EVERY_FIELD))
    assert "<DB_PASSWORD>" not in repr(config)
    assert "s3cret" not in repr(config)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('agent { server { port = "http" } }', ["Expected value of type", "port"]),
        ('agent { datastore { datastoreType = "mysql" } }', ["datastoreType", "mysql"]),
        ("agent { server { port = 70000 } }", ["isBetween(0, 65535)", "port = 70000"]),
        ("cli { api { port = -1 } }", ["isBetween(0, 65535)", "port = -1"]),
        ('agent { datastore { postgres { connectionParams = "sslmode" } } }', ["connectionParams"]),
        ('agent { bogus = 1 }', ["Cannot find property `bogus`"]),
        ('cli { api { url = "localhost/api" } }', ["url"]),
        ('cli { api { url = "ftp://localhost" } }', ["url"]),
        ('agent { synchronization { interval = 0.s } }', ["this.value > 0", "interval = 0.s"]),
        ('agent { resourcePlugins { new Config.BaseResourcePluginConfig { type = "X"; '
         'discoveryFilters { new { resourceTypes { "not-a-type" }; conditions { new { propertyPath = "$.A" } } } } } } }',
         ["not-a-type"]),
    ],
)
def test_bad_values_fail_naming_the_field(write_pkl, body: str, expected: list[str]) -> None:
    path = write_pkl("bad.pkl", f'amends "svc:/Config.pkl"\nimport "svc:/Config.pkl"\n{body}\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"invalid config {path}")
    for fragment in expected:
        assert fragment in message


def test_a_file_that_does_not_amend_the_config_is_refused(write_pkl) -> None:
    path = write_pkl("other.pkl", 'x = 1\noutput { renderer = new JsonRenderer {} }\n')
    with pytest.raises(ConfigError, match='amends "svc:/Config.pkl"'):
        load_config(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.pkl")


def test_plugin_specific_fields_land_in_settings(write_pkl) -> None:
    path = write_pkl("plugin.pkl", """
        amends "svc:/Config.pkl"
        import "svc:/Config.pkl"
        local class SftpConfig extends Config.BaseResourcePluginConfig { timeoutSeconds: Int = 30 }
        agent { resourcePlugins { new SftpConfig { type = "SFTP"; timeoutSeconds = 60 } } }
    """)
    (plugin,) = load_config(path).agent.resource_plugins
    assert plugin.type == "SFTP" and plugin.settings == {"timeoutSeconds": 60}


def test_plugin_types_must_be_distinct(write_pkl) -> None:
    path = write_pkl("dup.pkl", """
        amends "svc:/Config.pkl"
        import "svc:/Config.pkl"
        agent { resourcePlugins {
          new Config.BaseResourcePluginConfig { type = "AWS" }
          new Config.BaseResourcePluginConfig { type = "AWS" }
        } }
    """)
    with pytest.raises(ConfigError, match="isDistinctBy"):
        load_config(path)


def test_the_source_of_svc_upgrades_is_configurable(write_pkl) -> None:
    config = load_config(write_pkl("upgrade.pkl", 'amends "svc:/Config.pkl"\ncli { upgrade {\n'
                                   '  indexUrl = "https://packages.example.com/simple"\n  findLinks { "/srv/svc-wheels" }\n} }\n'))
    assert config.cli.upgrade.index_url == "https://packages.example.com/simple"
    assert config.cli.upgrade.find_links == ("/srv/svc-wheels",)
