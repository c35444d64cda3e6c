# frozen_string_literal: true

# The cookbook's plain-Ruby helpers under minitest (ChefSpec cannot be installed here). Run by
# tests/provision/chef/test_ruby_helpers.py: ruby test_libraries.rb COOKBOOK_DIR
require 'minitest/autorun'
require 'tmpdir'
require 'json'
require 'yaml'

COOKBOOK = ARGV.fetch(0)
%w(access kubeadm upgrade).each { |lib| require File.join(COOKBOOK, 'libraries', lib) }

# A scripted kubeadm: each `kubeadm join` takes the next outcome; every command is recorded.
class FakeKubeadm
  attr_reader :calls, :tokens

  def initialize(outcomes)
    @outcomes = outcomes
    @calls = []
    @tokens = []
  end

  def run(argv)
    @calls << argv.join(' ')
    return ClusterNode::Joiner::Result.new(ok: true, output: '') unless argv[1] == 'join'

    ok, output = @outcomes.shift
    ClusterNode::Joiner::Result.new(ok: ok, output: output)
  end
end

class JoinerTest < Minitest::Test
  EXPIRED = 'error execution phase preflight: couldn\'t validate the identity of the API Server: could not find ' \
            'a JWS signature in the cluster-info ConfigMap for token ID "abcdef"'

  def joiner(kubeadm, tokens:, joined: false, partial: false, attempts: 3)
    ops = ClusterNode::Joiner::Ops.new(
      run: kubeadm.method(:run), joined: -> { joined }, partial: -> { partial },
      fetch_token: -> { tokens.shift || tokens_exhausted },
      write_config: ->(token) { kubeadm.tokens << token and '/etc/kubernetes/kubeadm-join.yaml' }
    )
    ClusterNode::Joiner.new(ops, attempts: attempts, sleep: ->(_) {})
  end

  def tokens_exhausted
    raise 'no more tokens'
  end

  def test_registered_node_is_left_alone
    kubeadm = FakeKubeadm.new([])
    assert_equal :already_joined, joiner(kubeadm, tokens: ['t1'], joined: true).join!
    assert_empty kubeadm.calls
  end

  def test_first_join_succeeds
    kubeadm = FakeKubeadm.new([[true, '']])
    assert_equal :joined, joiner(kubeadm, tokens: ['t1']).join!
    assert_equal ['kubeadm join --config /etc/kubernetes/kubeadm-join.yaml'], kubeadm.calls
  end

  def test_partial_join_is_reset_before_joining
    kubeadm = FakeKubeadm.new([[true, '']])
    joiner(kubeadm, tokens: ['t1'], partial: true).join!
    assert_equal ['kubeadm reset --force', 'kubeadm join --config /etc/kubernetes/kubeadm-join.yaml'], kubeadm.calls
  end

  def test_failure_is_reset_and_retried
    kubeadm = FakeKubeadm.new([[false, "error: timed out waiting for the condition\n"], [true, '']])
    assert_equal :joined, joiner(kubeadm, tokens: ['t1']).join!
    assert_equal ['kubeadm join --config /etc/kubernetes/kubeadm-join.yaml', 'kubeadm reset --force',
                  'kubeadm join --config /etc/kubernetes/kubeadm-join.yaml'], kubeadm.calls
    assert_equal %w(t1 t1), kubeadm.tokens
  end

  def test_expired_token_is_replaced_from_ssm
    kubeadm = FakeKubeadm.new([[false, EXPIRED], [true, '']])
    joiner(kubeadm, tokens: %w(old new)).join!
    assert_equal %w(old new), kubeadm.tokens
  end

  def test_expired_token_not_yet_rotated_fails_with_the_reason
    kubeadm = FakeKubeadm.new([[false, EXPIRED]])
    error = assert_raises(RuntimeError) { joiner(kubeadm, tokens: %w(old old)).join! }
    assert_match(/join token in SSM has expired and has not been replaced/, error.message)
    assert_equal 'kubeadm reset --force', kubeadm.calls.last
  end

  def test_every_attempt_failing_raises_with_the_last_error_and_leaves_the_node_reset
    kubeadm = FakeKubeadm.new([[false, 'a'], [false, 'b'], [false, "x\nconnection refused"]])
    error = assert_raises(RuntimeError) { joiner(kubeadm, tokens: ['t1']).join! }
    assert_equal 'cluster_node: kubeadm join failed 3 times (reset after each): connection refused', error.message
    assert_equal 'kubeadm reset --force', kubeadm.calls.last
    assert_equal 3, kubeadm.calls.count { |c| c.include?('join') }
  end
end

class UpgradeTest < Minitest::Test
  def pod(name, namespace, labels = {})
    { 'metadata' => { 'name' => name, 'namespace' => namespace }, 'labels' => labels }
  end

  def test_daemonset_and_kube_system_pods_are_not_workloads
    json = JSON.generate('items' => [
                           pod('train-0', 'research', 'batch.kubernetes.io/job-name' => 'train'),
                           pod('nvidia-device-plugin-x', 'kube-system', 'pod-template-generation' => '1'),
                           pod('dcgm-exporter-y', 'monitoring', 'pod-template-generation' => '3'),
                           pod('kube-proxy-z', 'kube-system')
                         ])
    assert_equal ['research/train-0'], ClusterNode::Upgrade.workload_pods(json)
    assert_empty ClusterNode::Upgrade.workload_pods('')
  end

  def test_a_changed_script_waits_while_a_job_runs
    Dir.mktmpdir do |dir|
      digests = { 'base.sh' => 'aaa', 'kubernetes.sh' => 'bbb', 'check.sh' => 'ccc' }
      File.write(File.join(dir, '.base.sh.aaa.done'), '')
      pending = ClusterNode::Upgrade.pending(%w(base.sh kubernetes.sh check.sh), digests, dir)
      assert_equal ['kubernetes.sh'], pending
      assert_equal :wait, ClusterNode::Upgrade.decision(pending: pending, joined: true, workload: ['research/train-0'])
      assert_equal :install, ClusterNode::Upgrade.decision(pending: pending, joined: true, workload: [])
      assert_equal :install, ClusterNode::Upgrade.decision(pending: pending, joined: false, workload: ['x/y'])
      assert_equal :nothing, ClusterNode::Upgrade.decision(pending: [], joined: true, workload: ['x/y'])
    end
  end
end

class AccessTest < Minitest::Test
  def test_local_keys_are_copied_outside_the_homes_once
    Dir.mktmpdir do |dir|
      home = File.join(dir, 'home')
      dest = File.join(dir, 'etc/ssh/authorized_keys')
      FileUtils.mkdir_p(File.join(home, 'ubuntu/.ssh'))
      FileUtils.mkdir_p(File.join(home, 'empty/.ssh'))
      File.write(File.join(home, 'ubuntu/.ssh/authorized_keys'), "ssh-ed25519 AAAA admin@installer\n")
      File.write(File.join(home, 'empty/.ssh/authorized_keys'), "\n")
      assert_equal ['ubuntu'], ClusterNode::Access.preserve_local_keys(home, dest)
      assert_equal "ssh-ed25519 AAAA admin@installer\n", File.read(File.join(dest, 'ubuntu'))
      assert_equal 0o644, File.stat(File.join(dest, 'ubuntu')).mode & 0o777
      File.write(File.join(home, 'ubuntu/.ssh/authorized_keys'), "ssh-ed25519 BBBB other\n")
      assert_empty ClusterNode::Access.preserve_local_keys(home, dest) # an existing key file wins
      FileUtils.rm_f(File.join(dest, 'ubuntu'))
      assert_empty ClusterNode::Access.preserve_local_keys(home, dest, nfs_mounted: true) # NFS homes: not local
      mounts = "10.16.0.5:/export/home /home nfs4 rw,relatime 0 0\n/dev/sda1 / ext4 rw 0 0\n"
      assert ClusterNode::Access.nfs_mount?('/home', mounts)
      refute ClusterNode::Access.nfs_mount?('/', mounts)
    end
  end

  def test_sshd_and_sudoers_lines
    assert_includes ClusterNode::Access.sshd_config('/etc/ssh/authorized_keys'),
                    "AuthorizedKeysFile /etc/ssh/authorized_keys/%u .ssh/authorized_keys\n"
    assert_includes ClusterNode::Access.sudoers('cluster-admins'), "%cluster-admins ALL=(ALL:ALL) NOPASSWD: ALL\n"
  end

  # Issue 36: a researcher never shares a uid with a local account (the installer's admin, uid 1000, has sudo).
  def test_a_spec_uid_held_by_a_local_account_is_a_conflict
    passwd = "root:x:0:0:root:/root:/bin/bash\nlabadmin:x:1000:1000::/home/labadmin:/bin/bash\n" \
             "alice:x:2001:2001::/home/alice:/bin/bash\n"
    users = [{ 'name' => 'alice', 'uid' => 2001 }, { 'name' => 'mallory', 'uid' => 1000 }, { 'name' => 'bob', 'uid' => 2002 }]
    assert_equal ["uid 1000: mallory is labadmin's"], ClusterNode::Access.uid_conflicts(users, passwd)
    assert_empty ClusterNode::Access.uid_conflicts(users.first(1), passwd)
  end

  # Issue 36: an admin (sudo) never has their home on the shared export, a researcher always does.
  def test_admin_homes_are_off_the_export
    root = '/var/lib/cluster-admins'
    assert_equal '/var/lib/cluster-admins/alice', ClusterNode::Access.home({ 'name' => 'alice', 'admin' => true }, root)
    assert_equal '/home/bob', ClusterNode::Access.home({ 'name' => 'bob', 'admin' => false }, root)
    refute ClusterNode::Access.home({ 'name' => 'alice', 'admin' => true }, root).start_with?('/home/')
  end
end

# The templates the resources and recipes render through the libraries (ErbView: the join config is re-rendered
# with a fresh token inside one action).
class TemplatesTest < Minitest::Test
  def template(name)
    File.read(File.join(COOKBOOK, 'templates', name))
  end

  def node
    { 'cluster_node' => { 'kubernetes' => { 'kubeadm_api_version' => 'v1beta4', 'api_endpoint' => '10.0.0.10:6443' } } }
  end

  def test_join_config_rendered_with_a_token
    server = { 'ip' => '10.16.1.11', 'labels' => { 'research.cluster/site' => 'lab' },
               'taints' => [{ 'key' => 'k', 'value' => 'v', 'effect' => 'NoSchedule' }] }
    view = ClusterNode::ErbView.new(node, node_name: 'titan-01', server: server, token: 'abcdef.0123456789abcdef',
                                          ca_cert_hash: 'sha256:00')
    config = YAML.safe_load(view.render(template('kubeadm-join.yaml.erb')))
    assert_equal 'kubeadm.k8s.io/v1beta4', config['apiVersion']
    assert_equal 'abcdef.0123456789abcdef', config['discovery']['bootstrapToken']['token']
    assert_equal 'titan-01', config['nodeRegistration']['name']
    assert_equal [{ 'key' => 'k', 'value' => 'v', 'effect' => 'NoSchedule' }], config['nodeRegistration']['taints']
  end

  def test_sudoers_and_sshd_templates
    sudoers = ClusterNode::ErbView.new(node, group: 'cluster-admins').render(template('sudoers.erb'))
    assert_equal ClusterNode::Access.sudoers('cluster-admins'), sudoers
    sshd = ClusterNode::ErbView.new(node, keys_dir: '/etc/ssh/authorized_keys').render(template('sshd-authorized-keys.conf.erb'))
    assert_match(%r{^AuthorizedKeysFile /etc/ssh/authorized_keys/%u \.ssh/authorized_keys$}, sshd)
  end
end
