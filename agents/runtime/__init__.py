"""What every system runs on: the batch's guards (batch.py: deadline, faults, skip-for-time), the
deadline's cost model (deadline.py), the trace fields every system records (trace.py), the
`Stage` and `System` records and their registry (system.py), and the report's view over any
registered system (trace_view.py)."""
