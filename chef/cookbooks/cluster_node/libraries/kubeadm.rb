# frozen_string_literal: true

require 'erb'

module ClusterNode
  # kubeadm join that recovers: a partial join (kubelet configured but never registered) is reset first; a failed
  # join is reset and retried; an expired or deleted bootstrap token is replaced by the current one from SSM.
  # Plain Ruby with the commands injected, so minitest covers every path without Chef or a cluster.
  class Joiner
    # kubeadm's messages when the bootstrap token is unknown to the cluster (expired tokens are deleted by the
    # token cleaner): cmd/kubeadm/app/discovery/token ("could not find a JWS signature ... for token ID").
    EXPIRED_TOKEN = /could not find a JWS signature|token id "?\w+"? is invalid|invalid bootstrap token/i

    Result = Struct.new(:ok, :output, keyword_init: true)
    # run: ->(argv) { Result }; fetch_token: -> { token } (read from SSM on each call);
    # write_config: ->(token) { path };
    # joined: -> { registered with the API server }; partial: -> { kubelet configured by an earlier, failed join }
    Ops = Struct.new(:run, :fetch_token, :write_config, :joined, :partial, keyword_init: true)

    def initialize(ops, attempts: 3, sleep: ->(s) { Kernel.sleep(s) })
      @ops = ops
      @attempts = attempts
      @sleep = sleep
    end

    # :already_joined or :joined; raises with the last kubeadm error after every attempt failed.
    def join!
      return :already_joined if @ops.joined.call

      reset! if @ops.partial.call
      @token = @ops.fetch_token.call
      errors = Array.new(@attempts) do |i|
        result = attempt
        return :joined if result.ok

        backoff(i)
        last_line(result.output)
      end
      raise "cluster_node: kubeadm join failed #{@attempts} times (reset after each): #{errors.last}"
    end

    private

    # One join; a failure is reset at once, so nothing half-joined is left behind (not even after the last attempt),
    # and an expired token is replaced for the next attempt.
    def attempt
      result = @ops.run.call(['kubeadm', 'join', '--config', @ops.write_config.call(@token)])
      return result if result.ok

      reset!
      @token = fresh_token(@token) if EXPIRED_TOKEN.match?(result.output.to_s)
      result
    end

    def backoff(attempt)
      @sleep.call(10 * (2**attempt)) if attempt + 1 < @attempts
    end

    def last_line(output)
      output.to_s.strip.lines.last.to_s.strip
    end

    def reset!
      @ops.run.call(%w(kubeadm reset --force))
    end

    def fresh_token(old)
      token = @ops.fetch_token.call
      return token unless token == old

      raise 'cluster_node: the join token in SSM has expired and has not been replaced; ' \
            'create a new one on a control-plane node (kubeadm token create) and store it in SSM'
    end
  end

  # Renders a cookbook template as Chef does (``node`` and the variables as instance variables), for files that
  # must be re-rendered inside one action (the join config with a fresh token).
  class ErbView
    attr_reader :node

    def initialize(node, variables)
      @node = node
      variables.each { |key, value| instance_variable_set("@#{key}", value) }
    end

    def render(source)
      ERB.new(source, trim_mode: '-').result(binding)
    end
  end
end
