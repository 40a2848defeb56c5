"""The report's size limit on leak-table rows, at its edge (50,000 rows: seconds to build, so
kept out of the faster report tests)."""

from __future__ import annotations

from report_records import RecordFactory, entry, env_added

from statesnap.output.report.changes import ChangeViews
from statesnap.output.report.lanes import build_lanes
from statesnap.output.report.values import Scrubber
from statesnap.output.report.views import leak_tables


def test_the_leak_table_carries_50000_rows_and_counts_the_rest(
        make_record: RecordFactory) -> None:
    record = make_record([entry(0, "t.py::a", changes=[env_added(f"K{i:05d}", "x")
                                                       for i in range(50_001)])])
    summary, rows, total = leak_tables(build_lanes([record]), ChangeViews(Scrubber()))
    assert (len(rows), total) == (50_000, 50_001)
    assert rows[-1].change.key == "K49999"
    assert (summary[0].leaks, summary[0].keys) == (50_001, 50_001)
