"""The bottom layer: what every other part reads and nothing that renders or runs.

The cluster spec (``spec``, ``loader``, ``checks``, ``errors``, with the address plan and the driver table its
checks use), the instance and GPU catalog (``catalog``, ``data/``), the scheduler profiles (``scheduler``) and
the names the parts share (``names``: tags, labels, taints, ConfigMaps, the lease). ``provision``, ``autoscaler``
and ``labctl`` import it; it imports none of them (docs/architecture.md, "Layers"; tests/test_layers.py).
"""
