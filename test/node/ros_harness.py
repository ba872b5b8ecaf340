"""Harness for node tests: child node processes and waits on an rclpy node.

Used through the fixtures in test/node/conftest.py; test modules import ``helper_script`` and
``DEFAULT_TIMEOUT`` from here (``from ros_harness import ...``), never from conftest.
"""

import pathlib
import signal
import subprocess
import sys
import time

HELPERS = pathlib.Path(__file__).resolve().parent / 'helpers'
#: [s] The most a wait for a condition polls before it fails: a ceiling for a test that fails
#: anyway (a wait ends as soon as its condition holds, and at once when a watched process dies),
#: never an expectation of speed. 15 s was not enough for kin_node's start (rclpy, numpy, numba)
#: with every core of a 2-core machine busy (issue 41: "a subscriber on /joint_states" timed out).
DEFAULT_TIMEOUT = 60.0


class NodeProcess:
    """A child ``python`` process whose output goes to a log file.

    Only a test marked ``slow`` may start one (test/node/conftest.py sets :attr:`may_start`
    before each test): the quick tier runs no process.
    """

    #: Whether the running test may start processes (it is marked ``slow``).
    may_start = True

    def __init__(self, args, log_path, env=None, cwd=None):
        if not NodeProcess.may_start:
            raise AssertionError(f'a test that is not marked slow starts the process {args[:2]}: a test that '
                                 'starts processes or talks DDS belongs to the slow tier (test/node/conftest.py)')
        self.args = list(args)
        self.log_path = pathlib.Path(log_path)
        self._log = open(self.log_path, 'wb')
        self.popen = subprocess.Popen(
            [sys.executable, *self.args], stdout=self._log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=env, cwd=cwd)
        self.returncode = None

    @property
    def pid(self):
        return self.popen.pid

    def output(self):
        """Everything the process printed so far."""
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors='replace')

    def running(self):
        return self.popen.poll() is None

    def assert_running(self):
        """Fail with the process output if it has exited."""
        rc = self.popen.poll()
        if rc is not None:
            raise AssertionError(
                f'process {self.args} exited early with code {rc}; output:\n{self.output()}')

    def stop(self, timeout=10.0, expect_returncode=0):
        """Send SIGINT, wait up to ``timeout`` seconds and assert the exit code.

        A process that does not stop in time is killed and the assertion fails.
        """
        if self.returncode is None:
            if self.popen.poll() is None:
                self.popen.send_signal(signal.SIGINT)
                try:
                    self.popen.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self.popen.kill()
                    self.popen.wait()
                    self._log.close()
                    self.returncode = self.popen.returncode
                    raise AssertionError(
                        f'process {self.args} ignored SIGINT for {timeout} s and was killed; '
                        f'output:\n{self.output()}') from None
            self.returncode = self.popen.returncode
            self._log.close()
        if expect_returncode is not None and self.returncode != expect_returncode:
            raise AssertionError(
                f'process {self.args} exited with code {self.returncode}, expected '
                f'{expect_returncode}; output:\n{self.output()}')
        return self.returncode


def helper_script(name):
    """Path of a helper node script in test/node/helpers."""
    path = HELPERS / name
    assert path.is_file(), path
    return str(path)


class RosChecker:
    """A node in the test process plus waits that spin it until a condition holds."""

    def __init__(self, node, executor):
        self.node = node
        self.executor = executor
        self._clients = []

    def close(self):
        """Destroy the clients this checker created (the node is shared by the session)."""
        for client in self._clients:
            self.node.destroy_client(client)
        self._clients.clear()

    def spin_until(self, condition, what, timeout=DEFAULT_TIMEOUT, watch=()):
        """Spin until ``condition()`` is truthy and return its value.

        Raises AssertionError naming ``what`` after ``timeout`` seconds, or at once (with the
        process output) if a process in ``watch`` exits.
        """
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            for proc in watch:
                proc.assert_running()
            if time.monotonic() > deadline:
                raise AssertionError(f'timed out after {timeout} s waiting for {what}')
            self.executor.spin_once(timeout_sec=0.05)

    def wait_for_message(self, msg_type, topic, predicate=None, qos=10,
                         timeout=DEFAULT_TIMEOUT, watch=()):
        """Subscribe to ``topic`` and return the first message for which ``predicate`` holds."""
        received = []

        def callback(msg):
            if predicate is None or predicate(msg):
                received.append(msg)

        sub = self.node.create_subscription(msg_type, topic, callback, qos)
        try:
            self.spin_until(lambda: received, f'a matching {msg_type.__name__} on {topic}',
                            timeout=timeout, watch=watch)
        finally:
            self.node.destroy_subscription(sub)
        return received[0]

    def wait_for_service(self, srv_type, name, timeout=DEFAULT_TIMEOUT, watch=()):
        """Create a client for ``name`` and wait until a server is available."""
        client = self.node.create_client(srv_type, name)
        self._clients.append(client)
        self.spin_until(client.service_is_ready, f'service {name}', timeout=timeout, watch=watch)
        return client

    def call(self, client, request, timeout=DEFAULT_TIMEOUT, watch=()):
        """Call a service and return the response."""
        future = client.call_async(request)
        self.spin_until(future.done, f'a response from {client.srv_name}', timeout=timeout,
                        watch=watch)
        return future.result()

    def wait_for_node(self, name, timeout=DEFAULT_TIMEOUT, watch=(), namespace=None):
        """Wait until a node called ``name`` is in the graph (in ``namespace``, e.g. ``'/ns'``,
        when given: a node of that name elsewhere, such as one a test runs in-process, does not count)."""
        if namespace is None:
            self.spin_until(lambda: name in self.node.get_node_names(), f'node {name}', timeout=timeout, watch=watch)
        else:
            self.spin_until(lambda: (name, namespace) in self.node.get_node_names_and_namespaces(),
                            f'node {namespace}/{name}', timeout=timeout, watch=watch)


