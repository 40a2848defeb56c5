"""From a record to findings: leaks, attribution, hints, ddmin, stored verdicts.  Pure."""
