"""The trace-driven simulator: jobs from a trace replayed through the cluster model under each scaling policy.

``traces`` reads job traces, ``workload`` turns jobs into pods, ``policies`` holds ours (the real controller)
and the baselines, ``runner`` drives the model event by event, ``metrics`` and ``report`` compute and show the
figures, ``scenarios`` holds generated workloads (the burst story). docs/simulator.md explains it all.
"""
