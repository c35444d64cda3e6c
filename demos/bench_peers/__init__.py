"""``invoke bench-peers``: our autoscaler and Karpenter (kwok provider) on the same bursts, on the local stack."""
