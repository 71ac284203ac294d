"""The embedded servers' configuration: loopback only, every port chosen, Milvus capabilities by
reported version (fast: nothing is started here; the session fixtures start the real servers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from citerag.errors import BackendUnavailable
from citerag.store.milvus_caps import capabilities, parse_version
from devservers import etcd_config, free_ports, render_milvus_config

TEMPLATE = """etcd:
  endpoints: localhost:{{ etcd_port(int): 2379 }}
  data:
    dir: {{ etcd_data_dir }}
rootCoord:
  ip: # if not specify address, will use the first unicastable address as local ip
  port: {{ root_coord_port(int): 53100 }}
proxy:
  ip:
  port: {{ proxy_port(int): 19530 }}
  internalPort: {{ proxy_internal_port(int): 19529 }}
"""


def test_rendered_config_binds_every_component_to_loopback_on_the_chosen_ports() -> None:
    values = {
        "etcd_port": "41001",
        "root_coord_port": "41002",
        "proxy_port": "41003",
        "etcd_data_dir": "/data/etcd",
        "etcd_config_path": "/data/configs/etcd.yaml",
    }
    text = render_milvus_config(TEMPLATE, values)
    assert "{{" not in text
    assert re.findall(r"^\s+ip: (.*)$", text, re.MULTILINE) == ["127.0.0.1", "127.0.0.1"]
    assert "endpoints: 127.0.0.1:41001" in text
    assert "port: 41002" in text and "port: 41003" in text
    assert "internalPort: 19529" in text  # unset values keep the template's default
    assert "etcd:\n  config:\n    path: /data/configs/etcd.yaml\n" in text
    assert "localhost" not in text


def test_etcd_listens_on_loopback_client_and_peer_ports() -> None:
    text = etcd_config(Path("/data/etcd"), 41001, 41002)
    assert "listen-client-urls: http://127.0.0.1:41001" in text
    assert "listen-peer-urls: http://127.0.0.1:41002" in text
    assert "initial-cluster: citerag-milvus=http://127.0.0.1:41002" in text


def test_free_ports_are_distinct() -> None:
    ports = free_ports(12)
    assert len(set(ports)) == 12 and all(1024 < p < 65536 for p in ports)


@pytest.mark.parametrize(
    "version, server, index, bm25",
    [
        ("milvus_lite-3.2.2", False, "FLAT", True),
        ("v2.3.5-lite", True, "IVF_FLAT", False),  # the PyPI standalone build
        ("v2.4.13", True, "AUTOINDEX", False),
        ("v2.5.4", True, "AUTOINDEX", True),
        ("2.6.4", True, "AUTOINDEX", True),
    ],
)
def test_capabilities_follow_the_reported_version(
    version: str, server: bool, index: str, bm25: bool
) -> None:
    caps = capabilities(version, server)
    assert (caps.kind, caps.index_type, caps.bm25_function) == (
        "server" if server else "lite",
        index,
        bm25,
    )


def test_the_index_setting_overrides_the_version_default_on_a_server_only() -> None:
    assert capabilities("v2.3.5-lite", True, index_type="autoindex").index_type == "AUTOINDEX"
    assert capabilities("v2.5.4", True, index_type="ivf_flat").index_type == "IVF_FLAT"
    assert capabilities("milvus_lite-3.2.2", False, index_type="ivf_flat").index_type == "FLAT"


def test_servers_older_than_2_3_are_refused_in_one_sentence() -> None:
    with pytest.raises(BackendUnavailable, match=r"needs Milvus 2\.3 or newer"):
        capabilities("v2.2.16", True, "http://db:19530")
    assert parse_version("v2.3.5-lite") == (2, 3, 5)
    assert parse_version("garbage") == (0, 0, 0)
