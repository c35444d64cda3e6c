"""``make demo``'s runner (docs/demo.md): the embedded AWS (localcluster/aws_server.py) and the real autoscaler
started as processes, the demo's bursts submitted, what happens watched and printed in causal order, the timeline
plotted."""
