"""What bench/results/floor.json keeps of the floor bench's runs: the latest run of each
broker in full (``runs``), a line of figures for every run (``history``, kept across
invocations: one run of a node kill is one sample), and per broker the medians of those
lines with the ratio of each NATS version's medians to Debian's 2.9.10 (``comparison``).

``python -m bench.floor_record`` recomputes ``comparison`` from the history in the file.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "floor.json"
BASELINE = "nats-v2.9.10"  # Debian's (bookworm) NATS: the ratios are to it


def line(name: str, r: dict[str, Any]) -> dict[str, Any]:
    """One run's figures that compare across runs and versions."""
    rec = r.get("recovery") or {}
    lat = r["latency_ms"]
    return {
        "run": name, "finished": r.get("finished"), "command": r.get("command"),
        "load_avg_1m": r.get("load_avg_1m"), "deal_s": r["deal_s"],
        "results_journalled": r["results_journalled"], "received_live": r["received_live"],
        "recovered_by_replay": r["recovered_by_replay"], "lost": r["lost"],
        "duplicates": r["duplicates"],
        "latency_p50_ms": lat["p50_median_of_tables"],
        "latency_p99_ms": lat["p99_median_of_tables"],
        "worst_table_p99_ms": lat["p99_worst_table"],
        "broker_cpu_us_per_message": r["broker_cpu_us_per_message"],
        "broker_peak_rss_mib": r["broker_peak_rss_mib"],
        "tables_reconnected": r["tables_reconnected"],
        "stalled_rounds": r["stalled_rounds"],
        "offline_s_median": None if rec.get("offline_s_median") is None
        else round(rec["offline_s_median"], 2),
        "offline_s_max": rec.get("offline_s_max"),
        "results_over_10s": rec.get("results_over_10s"),
        "mqtt_sess_leader_s": (rec.get("elected_s") or {}).get("$MQTT_sess"),
        "mqtt_msgs_leader_s": (rec.get("elected_s") or {}).get("$MQTT_msgs")}


NOT_FIGURES = ("run", "finished", "command", "load_avg_1m")


def comparison(history: list[dict[str, Any]]) -> dict[str, Any]:
    """Per run name: how many runs, the medians of their figures (and the totals of what
    was lost or replayed), and each NATS version's medians over the baseline's."""
    by: dict[str, list[dict[str, Any]]] = {}
    for h in history:
        by.setdefault(h["run"], []).append(h)
    out: dict[str, Any] = {}
    for name, lines in by.items():
        med: dict[str, Any] = {}
        for key in lines[0]:
            values = [h[key] for h in lines if isinstance(h.get(key), int | float)]
            if key not in NOT_FIGURES and values:
                med[key] = round(statistics.median(values), 2)
        out[name] = {"runs": len(lines), "median": med,
                     "total_recovered_by_replay": sum(h["recovered_by_replay"] for h in lines),
                     "total_results": sum(h["results_journalled"] for h in lines),
                     "total_lost": sum(h["lost"] for h in lines)}
    base = out.get(BASELINE, {}).get("median", {})
    for name, c in out.items():
        if name.startswith("nats-") and name != BASELINE and base:
            c[f"ratio_to_{BASELINE}"] = {
                k: round(v / base[k], 2) for k, v in c["median"].items()
                if isinstance(base.get(k), int | float) and base[k]}
    return out


def record(earlier: dict[str, Any], runs: dict[str, dict[str, Any]],
           machine: dict[str, Any]) -> dict[str, Any]:
    """The file's new content: these runs added to what it held."""
    history = list(earlier.get("history") or [])
    history += [line(name, r) for name, r in runs.items()]
    return {"machine": machine, "comparison": comparison(history),
            "history": history, "runs": {**(earlier.get("runs") or {}), **runs}}


def main() -> None:
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    data["comparison"] = comparison(data.get("history") or [])
    RESULTS.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(data["comparison"], indent=2))


if __name__ == "__main__":
    main()
