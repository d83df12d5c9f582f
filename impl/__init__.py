"""Reference broker and controller (issue 6), written independently of spec/: it never
imports it.  See docs/cluster.md "The reference broker".

- ``zk``, ``zkclient``: the coordination store (ZooKeeper semantics) and Kafka's znodes.
- ``controller``, ``reassignment``, ``election``: the controller.
- ``replica_manager``, ``log``: the broker's replicas.
- ``broker``, ``cluster``: a broker process and the deterministic driver.
- ``admin``: the admin tools.  ``adapter``: the conformance adapter (action table).
"""
