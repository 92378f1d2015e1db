"""The in-process broker (makilab.broker): a waiting consumer misses no message and no freed slot.

Its consumer no longer polls: it sleeps until a put, an ack or a reject
advances the broker's counter. A change made between the consumer's last look
and its wait (a lost wake-up) would leave it asleep until its timeout while work
is there. The machine publishes from the test's thread (as the web threads do),
acks and rejects from it (as the worker's pool threads do), while a consumer
thread drains with prefetch 1 and a timeout far beyond the check's bound: after
each step the consumer must hold exactly what it may, without any timeout.
"""

from __future__ import annotations

import itertools
import threading
import time

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from kombu import Connection, Consumer, Exchange, Producer, Queue

from tests.stateful import stateful_settings

# The consumer's own wait: never reached unless a wake-up is lost.
CONSUMER_TIMEOUT_S = 60.0
# How long a check waits for the consumer to catch up: a bound on a hang, not a speed.
CATCH_UP_S = 10.0
_names = itertools.count()


class BrokerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        name = f"broker-machine-{next(_names)}"
        self.exchange = Exchange(name, type="direct")
        self.queue = Queue(name, self.exchange, routing_key=name)
        self.consumer_connection = Connection("memory://", transport="makilab.broker:Transport")
        self.producer_connection = Connection("memory://", transport="makilab.broker:Transport")
        channel = self.consumer_connection.channel()
        channel.basic_qos(0, 1, False)
        self.lock = threading.Lock()
        self.held: list = []  # delivered, neither acked nor rejected
        self.received: list[int] = []
        self.timeouts = 0
        self.stopping = False
        self.consumer = Consumer(channel, [self.queue], callbacks=[self._received])
        self.consumer.consume()
        self.producer = Producer(self.producer_connection.channel(), exchange=self.exchange)
        self.producer.declare()
        self.sent = 0
        self.freed = 0  # slots freed: acked or rejected (a requeued message comes back)
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _received(self, body, message) -> None:
        with self.lock:
            self.held.append(message)
            self.received.append(body["n"])

    def _drain(self) -> None:
        while not self.stopping:
            try:
                self.consumer_connection.drain_events(timeout=CONSUMER_TIMEOUT_S)
            except TimeoutError:
                with self.lock:
                    self.timeouts += 1

    @rule(count=st.integers(min_value=1, max_value=3))
    def publish(self, count: int) -> None:
        for _ in range(count):
            self.producer.publish({"n": self.sent}, routing_key=self.queue.routing_key)
            self.sent += 1

    @precondition(lambda self: self.held)
    @rule()
    def ack(self) -> None:
        with self.lock:
            message = self.held.pop(0)
        message.ack()
        self.freed += 1

    @precondition(lambda self: self.held)
    @rule(requeue=st.booleans())
    def reject(self, requeue: bool) -> None:
        with self.lock:
            message = self.held.pop(0)
        message.reject(requeue=requeue)
        self.freed += 1
        if requeue:
            self.sent += 1  # delivered again: one more to take

    @invariant()
    def the_consumer_holds_what_it_may_without_waiting_for_its_timeout(self) -> None:
        # Prefetch 1: one message held whenever one is waiting and none is held.
        expected = min(self.sent, self.freed + 1)
        deadline = time.monotonic() + CATCH_UP_S
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.received) >= expected:
                    break
            time.sleep(0.001)
        with self.lock:
            assert len(self.received) == expected, (len(self.received), expected)
            assert len(self.held) == (1 if self.sent > self.freed else 0)
            assert self.timeouts == 0

    def teardown(self) -> None:
        self.stopping = True
        # Free the slot and send one more: the consumer takes it and sees it must stop.
        with self.lock:
            held, self.held = self.held, []
        for message in held:
            message.ack()
        self.producer.publish({"n": -1}, routing_key=self.queue.routing_key)
        self.thread.join(timeout=CATCH_UP_S)
        assert not self.thread.is_alive()
        self.consumer_connection.release()
        self.producer_connection.release()


BrokerMachine.TestCase.settings = stateful_settings(examples=40, steps=25)
test_the_broker_wakes_its_consumer_on_every_change = BrokerMachine.TestCase
