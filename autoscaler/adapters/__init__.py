"""The live implementations of :mod:`autoscaler.interfaces`: Kubernetes API (``kubernetes``) and AWS (``aws``)."""
