"""`geobuild --protocol public` end to end with the `programs` engine (scripted ReAct replies)
and a fake GeoBuildBench checkout (small prompt files of the public names, never the real
ones): what the model is asked each round, when a problem ends, vision off, resume, bad
input; and the reply parser and the stratified sample on their own."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import pipelines.cli
from pipelines.geobuild.public_prompts import (
    HINT_KINDS,
    SYSTEM_FILE,
    TEMPLATE_FILE,
    hint_file,
    required_files,
)
from pipelines.geobuild.react_protocol import parse_reply
from pipelines.geobuild.stratified import stratified_ids
from tests.conftest import SHARED

DATA = SHARED / "geobuildbench"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"GeoBuild data not at {DATA}")

TEMPLATE = "PROBLEM <{problem_text}>\nHISTORY <{history}>\nGO"
GOOD_367 = """point : 0 0 -> O
point : 5 0 -> A
circle : O A -> c
rotate : A 100° O -> C
rotate : A 200° O -> D
rotate : A -60° O -> B
polygon : A B C D -> q AB BC CD DA"""
# Problem 370 fails every round, each time with another error kind.
WRONG_370 = [
    "point : 0 0 -> B\nline B C -> l",  # syntax
    "point : 0 0 -> B",  # runs, fails validation
    "point : 0 0 -> B\nline : B Z -> l",  # undefined_label
    "point : 0 0 -> B\npoint : 1 1 -> B",  # duplicate_label
    "point : 0 0 -> B\nline B C -> l",  # syntax
]


def _reply(thought: str, program: str, action: str = "generate_dsl") -> str:
    return f"**Thought:** {thought}\n\n**Action:** {action}\n\n```\n{program}\n```\n"


SCRIPT = [
    {"id": "367", "round": 1, "text": _reply("a square in a circle", GOOD_367)},
    *(
        {"id": "370", "round": k, "text": _reply(f"attempt {k}", p)}
        for k, p in enumerate(WRONG_370, 1)
    ),
    {"id": "380", "round": 1, "text": _reply("a start", "point : 0 0 -> O")},
    {"id": "380", "round": 2, "text": "**Thought:** done\n\n**Action:** final_answer\nAll built."},
]


def fake_checkout(root: Path, skip: str | None = None) -> Path:
    """A GeoBuildBench-like folder with every prompt file the public protocol reads."""
    texts = {SYSTEM_FILE: "FAKE SYSTEM PROMPT", TEMPLATE_FILE: TEMPLATE}
    texts |= {hint_file(kind): f"HINT-FOR-{kind.upper()}" for kind in set(HINT_KINDS.values())}
    for name, text in texts.items():
        if name != skip:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake_checkout(tmp_path_factory.mktemp("GeoBuildBench"))


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("script") / "react.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in SCRIPT) + "\n", encoding="utf-8")
    return path


def _main(argv: list[str]) -> int:
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(pipelines.cli.COMMANDS, "geobuild", ("pipelines.geobuild.loop", "loop"))
        return pipelines.cli.main(argv)


def _run(out: Path, script: Path, *extra: str) -> int:
    argv = ["geobuild", "--dataset", str(DATA), "--engine", "programs", "--model", str(script)]
    return _main([*argv, "--out", str(out), *extra])


def _rows(out: Path) -> pl.DataFrame:
    files = sorted(out.glob("geobuild/model=*/round=*/part-*.parquet"))
    return pl.read_parquet(files).sort("problem_id", "round")


def _row(rows: pl.DataFrame, pid: str, k: int) -> dict:
    return rows.filter((pl.col("problem_id") == pid) & (pl.col("round") == k)).row(0, named=True)


def _user_text(row: dict) -> str:
    (system, user) = json.loads(row["messages_json"])  # never a growing chat: two messages
    assert system["role"] == "system" and user["role"] == "user"
    return " ".join(p.get("text") or "" for p in user["content"])


def _images(row: dict) -> list[str]:
    parts = [p for m in json.loads(row["messages_json"]) for p in m["content"]]
    return [p["image_sha256"] for p in parts if p.get("type") == "image_url"]


@pytest.fixture(scope="module")
def public_run(
    ray_local, checkout: Path, script: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, pl.DataFrame]:
    out = tmp_path_factory.mktemp("public")
    extra = ["--ids", "367,370,380", "--protocol", "public", "--public-repo", str(checkout)]
    assert _run(out, script, *extra) == 0
    return out, _rows(out)


@needs_data
def test_round_one_asks_the_checkout_prompts(public_run: tuple[Path, pl.DataFrame]) -> None:
    _, rows = public_run
    first = _row(rows, "370", 1)
    system = json.loads(first["messages_json"])[0]["content"][0]["text"]
    assert system == "FAKE SYSTEM PROMPT"
    text = _user_text(first)
    assert text.startswith("PROBLEM <") and "HISTORY <This is your first attempt.>" in text
    assert _images(first) == []
    # The reply is kept as the model wrote it; the program is the one the public parser took.
    assert first["generated_text"].startswith("**Thought:** attempt 1")
    assert first["program"] == WRONG_370[0] and first["error_category"] == "syntax"


@needs_data
def test_round_two_holds_the_hint_of_the_error_kind_and_the_latest_figure(
    public_run: tuple[Path, pl.DataFrame],
) -> None:
    _, rows = public_run
    second = _row(rows, "370", 2)
    text = _user_text(second)
    assert "HINT-FOR-SYNTAX" in text and "HINT-FOR-UNDEFINED" not in text
    assert "attempt 1" in text and WRONG_370[0] in text
    # Round 1's program failed: the public executor renders nothing, so no figure is sent.
    assert _images(second) == []
    # 380's round-1 program ran: its figure is round 2's one image.
    figure = _row(rows, "380", 1)["feedback_image_sha256"]
    assert figure is not None and _images(_row(rows, "380", 2)) == [figure]
    # Round 3 of 370: round 1's hint is still in memory, and round 2's figure comes along.
    third = _row(rows, "370", 3)
    assert "HINT-FOR-SYNTAX" in _user_text(third)
    assert _images(third) == [second["feedback_image_sha256"]]
    assert all(len(_images(row)) <= 1 for row in rows.iter_rows(named=True))


@needs_data
def test_memory_keeps_the_last_three_steps(public_run: tuple[Path, pl.DataFrame]) -> None:
    _, rows = public_run
    assert rows.filter(pl.col("problem_id") == "370")["round"].to_list() == [1, 2, 3, 4, 5]
    fifth = _user_text(_row(rows, "370", 5))
    shown = [k for k in range(1, 5) if f"**Iteration {k}:" in fifth]
    assert shown == [2, 3, 4]
    assert "attempt 1" not in fifth and "Total: 4 iterations" in fifth
    # Steps 3 and 4 failed on an undefined and a duplicate label; step 1's syntax hint is gone.
    assert "HINT-FOR-UNDEFINED" in fifth and "HINT-FOR-DUPLICATE" in fifth
    assert "HINT-FOR-SYNTAX" not in fifth


@needs_data
def test_success_and_final_answer_end_a_problem(public_run: tuple[Path, pl.DataFrame]) -> None:
    _, rows = public_run
    assert rows.filter(pl.col("problem_id") == "367")["round"].to_list() == [1]
    # final_answer re-submits the last program that ran, and is the problem's last round.
    assert rows.filter(pl.col("problem_id") == "380")["round"].to_list() == [1, 2]
    assert _row(rows, "380", 2)["program"] == "point : 0 0 -> O"


@needs_data
def test_a_geosee_run_in_a_public_folder_is_refused(
    public_run: tuple[Path, pl.DataFrame], script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, rows = public_run
    assert _run(out, script, "--ids", "367,370,380") == 2
    assert "protocol" in capsys.readouterr().err
    assert _rows(out).equals(rows)


def _files(out: Path) -> dict[str, bytes]:
    return {str(f.relative_to(out)): f.read_bytes() for f in sorted(out.rglob("*")) if f.is_file()}


@needs_data
def test_a_public_run_resumed_with_other_max_tokens_is_refused_writing_nothing(
    public_run: tuple[Path, pl.DataFrame],
    checkout: Path,
    script: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, _rows_before = public_run
    before = _files(out)
    extra = ["--ids", "367,370,380", "--protocol", "public", "--public-repo", str(checkout)]
    capsys.readouterr()
    assert _run(out, script, *extra, "--max-tokens", "4096") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "max_tokens" in err and "10000" in err, err
    assert _files(out) == before


@needs_data
def test_a_public_runs_reported_success_stops_on_the_public_verdict(
    public_run: tuple[Path, pl.DataFrame],
) -> None:
    """The run stopped each problem on the public verdict: its public success is reported
    (367 of 367, 370, 380), with its protocol; our rule's, which it never stopped on, not."""
    from pipelines.geobuild.summarize import summary_tables

    out, rows = public_run
    (overall,) = summary_tables(out)["overall"].iter_rows(named=True)
    assert overall["protocol"] == "public"
    passed = {r["problem_id"] for r in rows.iter_rows(named=True) if r["success_public"]}
    assert overall["solved_public"] == len(passed) == 1
    assert overall["public_success_rate_all"] == pytest.approx(1 / 3)
    assert overall["solved"] is None and overall["success_rate_all"] is None
    # Its sampling is the public runner's: temperature 0, 10000 reply tokens.
    settings = json.loads(next(out.glob("geobuild/model=*/settings.json")).read_text())
    assert settings["sampling"]["temperature"] == 0.0
    assert settings["sampling"]["max_tokens"] == 10000


@pytest.mark.parametrize("protocol", ["geosee", "public"])
def test_the_stratified_samples_solved_follows_the_prior_runs_rule(
    tmp_path: Path, protocol: str
) -> None:
    """p1 passes the public rule only, p2 both: a problem is solved as the prior run's
    reported success counts it (its protocol's rule)."""
    from pipelines.geobuild.stratified import prior_outcomes
    from store.settings import write_settings

    folder = tmp_path / "geobuild" / "model=m"
    (folder / "round=1").mkdir(parents=True)
    if protocol == "public":
        write_settings(folder, {"protocol": "public"})
    public = json.dumps({"success_public": True})
    pl.DataFrame(
        {
            "problem_id": ["p1", "p2", "p3"],
            "success": [False, True, False],
            "error_category": [None, None, "syntax"],
            "verdict": [public, public, None],
        }
    ).write_parquet(folder / "round=1" / "part-0.parquet")
    solved = {pid for pid, ok in prior_outcomes(str(tmp_path)).items() if ok}
    assert solved == ({"p1", "p2"} if protocol == "public" else {"p2"})


def test_geobuild_temperature_help_is_geobuilds_own(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _main(["geobuild", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "public GeoBuildBench runner uses 0" in text and "0 and 0.6" not in text


@needs_data
def test_vision_off_sends_no_figure_and_says_so(
    ray_local, checkout: Path, script: Path, tmp_path: Path
) -> None:
    extra = ["--protocol", "public", "--public-repo", str(checkout), "--no-image"]
    assert _run(tmp_path, script, "--ids", "380", "--max-rounds", "2", *extra) == 0
    second = _row(_rows(tmp_path), "380", 2)
    assert _images(second) == [] and "Vision is disabled" in _user_text(second)


@needs_data
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--protocol", "public"], "--public-repo"),
        (["--public-repo", "x"], "needs --protocol public"),
        (["--protocol", "public", "--public-repo", "{missing}"], "prompts/react_template.txt"),
        (["--protocol", "public", "--public-repo", "{ok}", "--feedback", "errors"], "--feedback"),
        (["--stratified-sample", "5"], "--stratify-from"),
    ],
)
def test_bad_protocol_input_exits_2_and_writes_nothing(
    script: Path, tmp_path: Path, capsys, extra: list[str], message: str
) -> None:
    missing = fake_checkout(tmp_path / "missing", skip="prompts/react_template.txt")
    ok = fake_checkout(tmp_path / "ok")
    extra = [e.format(missing=missing, ok=ok) for e in extra]
    out = tmp_path / "out"
    assert _run(out, script, *extra) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1 and not out.exists()


def test_every_prompt_file_is_required(tmp_path: Path) -> None:
    from pipelines.geobuild.public_prompts import load_public_prompts
    from store.errors import UsageError

    for name in required_files():
        root = fake_checkout(tmp_path / name.replace("/", "_"), skip=name)
        with pytest.raises(UsageError, match=name):
            load_public_prompts(root)
    assert load_public_prompts(fake_checkout(tmp_path / "all")).hint_for("syntax")


def test_reply_parsing_follows_the_public_agent() -> None:
    two_blocks = "**Thought:** plan\n**Action:** modify_dsl\n```dsl\nA\n```\nthen\n```\nB\n```"
    parsed = parse_reply(two_blocks)
    assert (parsed.thought, parsed.action, parsed.content) == ("plan", "modify_dsl", "A")
    bare = parse_reply("intro\npoint : 0 0 -> A\nsegment : A A -> s\n\nbye")
    assert bare.action == "generate_dsl" and bare.thought == "No thought provided"
    assert bare.content == "point : 0 0 -> A\nsegment : A A -> s"
    assert parse_reply("nothing here").content == "nothing here"


def test_stratified_sample_is_seeded_and_seventy_thirty() -> None:
    outcomes = {str(i): i % 3 == 0 for i in range(300)}  # 100 solved, 200 failed
    picked = stratified_ids(outcomes, 100, seed=7)
    assert len(set(picked)) == 100 and sum(outcomes[p] for p in picked) == 70
    assert picked == stratified_ids(outcomes, 100, seed=7)
    assert picked != stratified_ids(outcomes, 100, seed=8)
    # Too few solved problems: the failed side makes up the difference.
    few = {str(i): i < 5 for i in range(50)}
    assert sum(few[p] for p in stratified_ids(few, 20, seed=1)) == 5


@needs_data
def test_stratified_sample_draws_on_an_earlier_runs_outcomes(
    public_run: tuple[Path, pl.DataFrame],
) -> None:
    from geometry.dsl.dataset import load_problems
    from pipelines.geobuild.problem_selection import stratified_problems

    out, rows = public_run
    solved = set(rows.filter(pl.col("success"))["problem_id"])
    assert solved == {"367"}  # 370 and 380 never passed
    problems = load_problems(DATA)
    for seed in range(5):
        picked = [p.id for p in stratified_problems(problems, str(out), 2, seed)]
        # int(2 x 0.7) = 1 solved, the rest failed; only the earlier run's problems.
        assert len(picked) == 2 and "367" in picked and set(picked) <= {"367", "370", "380"}


def test_restore_reply_keeps_a_blocks_all_null_column_typed(ray_local) -> None:
    """A block whose every program ran has an all-null error_category; mapped through numpy
    it came back as floats, and the round writer's batch of two blocks could not merge it
    with the other block's strings (the solver engine under --protocol public crashed)."""
    import pyarrow as pa

    from pipelines.geobuild.react_protocol import FINAL_DSL_COLUMN, REPLY_COLUMN, restore_reply

    def block(category: str | None) -> pa.Table:
        return pa.table(
            {
                "problem_id": ["p"],
                "error_category": pa.array([category], pa.string() if category else pa.null()),
                "generated_text": ["program"],
                REPLY_COLUMN: ["the reply"],
                FINAL_DSL_COLUMN: [None],
            }
        )

    ds = ray_local.data.from_arrow([block(None), block("syntax")])
    ds = ds.map_batches(restore_reply, batch_format="pyarrow")
    rows = ds.map_batches(lambda b: b, batch_size=64, batch_format="pyarrow").take_all()
    assert sorted(str(r["error_category"]) for r in rows) == ["None", "syntax"]
    assert {r["generated_text"] for r in rows} == {"the reply"}
    assert not {REPLY_COLUMN, FINAL_DSL_COLUMN} & set(rows[0])
