#if canImport(FoundationNetworking)
import Foundation
import NIOCore
import NIOPosix
@testable import PinStoreNIO
import Testing

/// One timer serves the resource deadlines of all loads of a pinned session: each load still
/// expires at its own deadline, whatever order they come in, and a finished load never does.
@Suite struct ResourceDeadlineTimerTests {
    typealias Deadline = PinnedHTTPSTransport.ResourceDeadline

    let timer = PinnedHTTPSTransport.ResourceDeadlineTimer(eventLoop: MultiThreadedEventLoopGroup.singleton.next())

    @Test func anEarlierDeadlineRegisteredAfterALaterOneExpiresOnTime() async throws {
        let late = Deadline()
        let early = Deadline()
        late.start(with: timer, at: .now() + .seconds(30))
        early.start(with: timer, at: .now() + .milliseconds(100))
        try await Task.sleep(for: .milliseconds(600))
        #expect(early.expired)
        #expect(!late.expired)
        late.finish()
    }

    @Test func deadlinesExpireOneAfterTheOther() async throws {
        let first = Deadline()
        let second = Deadline()
        first.start(with: timer, at: .now() + .milliseconds(100))
        second.start(with: timer, at: .now() + .milliseconds(700))
        try await Task.sleep(for: .milliseconds(400))
        #expect(first.expired)
        #expect(!second.expired)
        try await Task.sleep(for: .milliseconds(900))
        #expect(second.expired)
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
