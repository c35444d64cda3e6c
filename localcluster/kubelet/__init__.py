"""The process kubelet (agent.py): an agent of kube-apiserver that runs the pods bound to its nodes as local
processes, with a kubelet endpoint for ``kubectl logs`` (server.py). images.py and expansion.py are its pure parts
(what an image runs, how a container's words are rewritten)."""
