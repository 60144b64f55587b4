"""Write examples/agent_traces.json: the agent conversations of examples/conversations.jsonl as an OTLP trace
export, one ExportTraceServiceRequest a line (as the OpenTelemetry Collector's file exporter writes them), each
conversation a trace of OpenTelemetry GenAI spans (scorers.io.otel.conversation_to_otlp). Trace ids are drawn from
a seeded generator, so the file is the same on every run:

    python examples/make_agent_traces.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from scorers.io.otel import conversation_to_otlp

HERE = Path(__file__).parent
SEED = 29


def main() -> None:
    draw = random.Random(SEED)
    lines = []
    for index, line in enumerate((HERE / "conversations.jsonl").read_text(encoding="utf-8").splitlines()):
        row = json.loads(line)
        trace_id = f"{draw.getrandbits(128):032x}"
        start_ns = 1_767_225_600_000_000_000 + index * 60_000_000_000  # a minute apart from 2026-01-01
        export = conversation_to_otlp(row["conversation"], trace_id=trace_id, start_ns=start_ns)
        lines.append(json.dumps(export, ensure_ascii=False))
    (HERE / "agent_traces.json").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
