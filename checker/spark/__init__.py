"""The Spark engine: the same search as checker.bfs, with the frontier and the
visited set partitioned across Spark executors (see checker.spark.engine)."""

from checker.spark.engine import SparkCheckResult, check

__all__ = ["check", "SparkCheckResult"]
