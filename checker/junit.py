"""JUnit XML for CI (``--junit OUT.xml`` on ``kmc check``, ``kmc conform`` and ``kmc prove``).

One test case per property (per trace or preset for conform), so a CI server shows
which property failed, not only that the job did.  A violation is a ``<failure>`` whose
message is one line and whose text ends with the command that replays it; a property
that was not checked (the search stopped first) is ``<skipped>``.  The XML is written
with the standard library's ElementTree, which escapes every text and attribute.

    >>> xml = junit_xml("kmc check", [Case("LeaderInIsr", "kafka.tiny"),
    ...                               Case("ZkLeaderIsRegistered", "kafka.tiny", failure="violated",
    ...                                    text="replay: kmc replay t.json")], seconds=1.5)
    >>> 'failures="1"' in xml and 'tests="2"' in xml and "kmc replay t.json" in xml
    True
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Sequence


@dataclass
class Case:
    name: str
    classname: str
    failure: str | None = None      # the one-line failure message, or None
    text: str = ""                  # the failure's or the skip's details
    skipped: str | None = None      # why the case was not run, or None
    seconds: float = 0.0


def junit_xml(suite: str, cases: Sequence[Case], seconds: float = 0.0) -> str:
    failures = sum(1 for c in cases if c.failure is not None)
    skipped = sum(1 for c in cases if c.skipped is not None and c.failure is None)
    root = ET.Element("testsuites", tests=str(len(cases)), failures=str(failures), errors="0",
                      skipped=str(skipped), time=f"{seconds:.3f}")
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)), failures=str(failures), errors="0",
                       skipped=str(skipped), time=f"{seconds:.3f}")
    for c in cases:
        tc = ET.SubElement(ts, "testcase", name=c.name, classname=c.classname, time=f"{c.seconds:.3f}")
        if c.failure is not None:
            f = ET.SubElement(tc, "failure", message=c.failure, type="violation")
            f.text = c.text
        elif c.skipped is not None:
            s = ET.SubElement(tc, "skipped", message=c.skipped)
            s.text = c.text or None
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
