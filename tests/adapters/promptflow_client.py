"""Runs the example flex flow through promptflow's Python API, ``PFClient().run``, in promptflow's venv; driven by
tests/adapters/test_promptflow.py. Usage: ``python promptflow_client.py FLOW DATA OUT.json``; writes the run's status
and metrics. promptflow is imported in main(): our own suite collects this file for doctests in the main environment,
which has no promptflow."""

import json
import sys


def main() -> None:
    from promptflow.client import PFClient

    flow, data, out = sys.argv[1:4]
    pf = PFClient()
    run = pf.run(
        flow=flow,
        data=data,
        init={"scorers": ["ExactMatch", "Levenshtein"]},  # a list, not --init's string
        column_mapping={"output": "${data.answer}", "expected": "${data.reference}"},
    )
    with open(out, "w") as f:
        json.dump({"status": run.status, "metrics": pf.get_metrics(run)}, f)


if __name__ == "__main__":  # PFClient.run starts worker processes: the guard is required
    main()
