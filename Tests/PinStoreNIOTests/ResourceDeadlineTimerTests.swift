#if canImport(FoundationNetworking)
import Foundation
import NIOCore
import NIOPosix
@testable import PinStoreNIO
import PinStoreTestSupport
import Testing

/// One timer serves the resource deadlines of all loads of a pinned session: each load still
/// expires at its own deadline, whatever order they come in, and a finished load never does.
@Suite struct ResourceDeadlineTimerTests {
    typealias Deadline = PinnedHTTPSTransport.ResourceDeadline

    let timer = PinnedHTTPSTransport.ResourceDeadlineTimer(eventLoop: MultiThreadedEventLoopGroup.singleton.next())

    /// Waits until `load` expired (``HangGuard`` bounds a timer that never fires: a loaded
    /// machine delays timers, and a bound of 10 s measured the machine).
    func expiry(of load: Deadline) async throws -> Bool {
        try await pollUntil { load.expired }
    }

    @Test func anEarlierDeadlineRegisteredAfterALaterOneExpiresOnTime() async throws {
        let late = Deadline()
        let early = Deadline()
        // An hour: the test must look before it passes, and a task beside other builds and a CPU
        // hog waited more than 60 s for its turn.
        late.start(with: timer, at: .now() + .hours(1))
        early.start(with: timer, at: .now() + .milliseconds(100))
        #expect(try await expiry(of: early))
        #expect(!late.expired)
        late.finish()
    }

    @Test func theTimerIsArmedAgainForTheNextDeadline() async throws {
        let first = Deadline()
        let second = Deadline()
        first.start(with: timer, at: .now() + .milliseconds(100))
        second.start(with: timer, at: .now() + .milliseconds(600))
        #expect(try await expiry(of: first))
        #expect(try await expiry(of: second))
        #expect(timer.pendingCount == 0)
    }

    @Test func aFinishedLoadNeverExpires() async throws {
        let load = Deadline()
        load.start(with: timer, at: .now() + .milliseconds(100))
        load.finish()
        #expect(timer.pendingCount == 0)
        try await Task.sleep(for: .milliseconds(400))
        #expect(!load.expired)
    }
}
#endif
