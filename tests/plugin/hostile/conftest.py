collect_ignore = ["suite"]  # the hostile suite runs in its own pytest processes
