# frozen_string_literal: true

module ClusterNode
  # Room for the system on a lab server: the kubelet's kubeReserved, systemReserved and evictionHard from the
  # server's cores, the formula of clusterspec/kubelet_reserved.py (amazon-eks-ami's nodeadm,
  # nodeadm/internal/kubelet/config.go getCPUMillicoresToReserve, getMemoryMebibytesToReserve), so a Titan X
  # server reserves what a cloud node of the same size does. Written as a kubeadm KubeletConfiguration patch.
  module KubeletReserved
    MAX_PODS = 110
    PATCHES_DIR = '/etc/kubernetes/patches'
    EVICTION_HARD = { 'memory.available' => '100Mi', 'nodefs.available' => '10%', 'nodefs.inodesFree' => '5%' }.freeze
    SYSTEM_RESERVED = { 'cpu' => '100m', 'memory' => '512Mi', 'ephemeral-storage' => '1Gi' }.freeze

    module_function

    def cpu_millicores(vcpus)
      total = vcpus * 1000
      ranges = [0, 1000, 2000, 4000, total]
      [600, 100, 50, 25].each_with_index.sum do |pct, i|
        start = ranges[i]
        total > start ? (([total, ranges[i + 1]].min - start) * pct) / 10_000 : 0
      end
    end

    def config(vcpus, max_pods = MAX_PODS)
      {
        'maxPods' => max_pods,
        'kubeReserved' => { 'cpu' => "#{cpu_millicores(vcpus)}m", 'memory' => "#{(11 * max_pods) + 255}Mi",
                            'ephemeral-storage' => '1Gi' },
        'systemReserved' => SYSTEM_RESERVED.dup,
        'evictionHard' => EVICTION_HARD.dup
      }
    end
  end
end
