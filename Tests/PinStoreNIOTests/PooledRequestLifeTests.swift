import PinStore
@testable import PinStoreNIO
import Testing

/// The life of one request in the pool, driven without sockets: where a cancellation finds it
/// decides what the pool does.
@Suite struct PooledRequestLifeTests {
    /// A control that counts its aborts.
    final class Aborts: Sendable {
        let count = Locked(0)
        var control: PinnedRequestControl {
            PinnedRequestControl(resumeReading: {}, abort: { _ in self.count.withLock { $0 += 1 } })
        }
    }

    @Test func aRequestCancelledWhileItWaitsLeavesThePoolQueue() {
        var life = PooledRequestLife()
        life.submitted(as: 7)
        guard case .removeFromQueue(7) = life.cancel() else {
            Issue.record("expected the request to leave the queue")
            return
        }
        #expect(life.isCancelled)
    }

    @Test func aRequestCancelledAfterItsLeaseIsAbortedWhenItsControlArrives() {
        var life = PooledRequestLife()
        life.submitted(as: 1)
        life.leased()
        guard case .nothing = life.cancel() else {
            Issue.record("a leased request has nothing to remove or abort yet")
            return
        }
        #expect(life.isCancelled)
        let abortsAtOnce = life.controlArrived(Aborts().control)
        #expect(abortsAtOnce)
    }

    @Test func aRunningRequestIsAbortedThroughItsControl() {
        var life = PooledRequestLife()
        let aborts = Aborts()
        life.submitted(as: 1)
        life.leased()
        let abortsAtOnce = life.controlArrived(aborts.control)
        #expect(!abortsAtOnce)
        #expect(life.control != nil)
        guard case .abort(let control) = life.cancel() else {
            Issue.record("expected the running request to be aborted")
            return
        }
        control.abort(.cancelled)
        #expect(aborts.count.withLock { $0 } == 1)
        #expect(life.control == nil)
    }

    @Test func aSecondCancellationAsksForNothing() {
        var life = PooledRequestLife()
        life.submitted(as: 3)
        _ = life.cancel()
        guard case .nothing = life.cancel() else {
            Issue.record("expected one cancellation to act once")
            return
        }
    }

    @Test func aCancelledRequestIsNeverRetried() {
        var life = PooledRequestLife()
        life.submitted(as: 1)
        life.leased()
        _ = life.cancel()
        let retried = life.retry()
        #expect(!retried)
    }

    @Test func aRetriedRequestStartsAfreshAndIsQueuedAgain() {
        var life = PooledRequestLife()
        life.submitted(as: 1)
        life.leased()
        let abortsAtOnce = life.controlArrived(Aborts().control)
        #expect(!abortsAtOnce)
        let retried = life.retry()
        #expect(retried)
        #expect(life.control == nil)
        life.submitted(as: 2)
        guard case .removeFromQueue(2) = life.cancel() else {
            Issue.record("expected the retried request to wait under its new ID")
            return
        }
    }

    @Test func aRequestCancelledBeforeItIsQueuedStaysCancelledThroughItsLease() {
        var life = PooledRequestLife()
        _ = life.cancel()
        life.submitted(as: 4)
        life.leased()
        #expect(life.isCancelled)
    }
}
