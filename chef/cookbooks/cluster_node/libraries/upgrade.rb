# frozen_string_literal: true

require 'json'

module ClusterNode
  # A version change never reinstalls the GPU stack under a running job: the node is cordoned (no new pods) and
  # the change waits until no workload pod runs here; DaemonSet pods and kube-system (the node's own agents) do
  # not count. Plain Ruby: tested with minitest on `crictl pods -o json` output.
  module Upgrade
    # DaemonSet pods carry the pod-template-generation label (pkg/controller/daemon: the DaemonSet controller
    # adds it to every pod it creates); crictl shows pod labels and the namespace as io.kubernetes.pod.namespace.
    DAEMONSET_LABEL = 'pod-template-generation'
    NAMESPACE_LABEL = 'io.kubernetes.pod.namespace'

    # "namespace/name" of every ready workload pod in `crictl pods --state ready -o json` output.
    def self.workload_pods(crictl_json)
      items = JSON.parse(crictl_json.to_s.empty? ? '{}' : crictl_json).fetch('items', [])
      items.filter_map { |pod| workload_name(pod) }.sort
    end

    def self.workload_name(pod)
      labels = pod['labels'] || {}
      meta = pod['metadata'] || {}
      namespace = meta['namespace'] || labels[NAMESPACE_LABEL]
      return nil if namespace == 'kube-system' || labels.key?(DAEMONSET_LABEL)

      "#{namespace}/#{meta['name']}"
    end

    # The scripts whose stamp is missing (content or versions changed) among those this server runs.
    def self.pending(names, digests, dir)
      names.reject { |n| n == 'check.sh' || File.exist?(File.join(dir, ".#{n}.#{digests[n]}.done")) }
    end

    # What to do now: :install (nothing runs here, or the node has not joined), :wait (cordon, and leave the
    # change for a later converge), :nothing (no script changed).
    def self.decision(pending:, joined:, workload:)
      return :nothing if pending.empty?
      return :install if !joined || workload.empty?

      :wait
    end
  end
end
