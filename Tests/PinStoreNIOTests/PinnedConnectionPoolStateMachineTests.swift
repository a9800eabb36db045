import PinStore
@testable import PinStoreNIO
import Testing

/// The pool's decisions, driven without sockets: events in, actions out.
@Suite struct PinnedConnectionPoolStateMachineTests {
    typealias Machine = PinnedConnectionPoolStateMachine
    let a = Machine.Key(host: HostName(normalized: "a.example"), port: 443)
    let b = Machine.Key(host: HostName(normalized: "b.example"), port: 443)

    /// A machine with one established, idle connection (id 1) for `a`, after request 1.
    func machineWithIdleConnection(limit: Int = 2) -> Machine {
        var machine = Machine(maximumConnectionsPerKey: limit)
        _ = machine.executeRequest(1, key: a)
        _ = machine.connectionEstablished(1)
        _ = machine.requestFinished(on: 1, reusable: true)
        return machine
    }

    @Test func firstRequestOpensAConnectionAndRunsOnItWhenEstablished() {
        var machine = Machine(maximumConnectionsPerKey: 2)
        #expect(machine.executeRequest(1, key: a) == [.createConnection(1, a)])
        #expect(machine.connectionEstablished(1) == [.execute(1, on: 1, reused: false)])
    }

    @Test func finishedReusableConnectionBecomesIdleWithATimer() {
        var machine = Machine(maximumConnectionsPerKey: 2)
        _ = machine.executeRequest(1, key: a)
        _ = machine.connectionEstablished(1)
        #expect(machine.requestFinished(on: 1, reusable: true) == [.scheduleIdleTimeout(1, epoch: 1)])
    }

    @Test func nextRequestReusesTheIdleConnection() {
        var machine = machineWithIdleConnection()
        #expect(machine.executeRequest(2, key: a) == [.execute(2, on: 1, reused: true)])
        #expect(machine.connectionCount(for: a) == 1)
    }

    @Test func connectionAdmittedForOneHostNeverServesAnother() {
        var machine = machineWithIdleConnection()
        #expect(machine.executeRequest(2, key: b) == [.createConnection(2, b)])
        #expect(machine.connectionEstablished(2) == [.execute(2, on: 2, reused: false)])
    }

    @Test func sameHostOnAnotherPortIsAnotherKey() {
        var machine = machineWithIdleConnection()
        let otherPort = Machine.Key(host: HostName(normalized: "a.example"), port: 8443)
        #expect(machine.executeRequest(2, key: otherPort) == [.createConnection(2, otherPort)])
    }

    @Test func requestsBeyondTheLimitWaitAndAreServedInArrivalOrder() {
        var machine = Machine(maximumConnectionsPerKey: 1)
        #expect(machine.executeRequest(1, key: a) == [.createConnection(1, a)])
        #expect(machine.executeRequest(2, key: a) == [])
        #expect(machine.executeRequest(3, key: a) == [])
        #expect(machine.connectionEstablished(1) == [.execute(1, on: 1, reused: false)])
        #expect(machine.requestFinished(on: 1, reusable: true) == [.execute(2, on: 1, reused: true)])
        #expect(machine.requestFinished(on: 1, reusable: true) == [.execute(3, on: 1, reused: true)])
        #expect(machine.connectionCount(for: a) == 1)
    }

    @Test func untilTheProtocolIsKnownOneConnectionIsOpenedAtATime() {
        var machine = Machine(maximumConnectionsPerKey: 6)
        #expect(machine.executeRequest(1, key: a) == [.createConnection(1, a)])
        #expect(machine.executeRequest(2, key: a) == [])
        // HTTP/1.1: the waiting request gets a connection of its own.
        #expect(machine.connectionEstablished(1) == [.execute(1, on: 1, reused: false), .createConnection(2, a)])
    }

    @Test func limitCountsConnectionsStillConnecting() {
        var machine = machineWithIdleConnection(limit: 2)
        #expect(machine.executeRequest(2, key: a) == [.execute(2, on: 1, reused: true)])
        #expect(machine.executeRequest(3, key: a) == [.createConnection(2, a)])
        #expect(machine.executeRequest(4, key: a) == [])
        #expect(machine.waitingCount == 2)
    }

    @Test func nonReusableResponseClosesTheConnectionAndOpensAnotherForTheQueue() {
        var machine = Machine(maximumConnectionsPerKey: 1)
        _ = machine.executeRequest(1, key: a)
        _ = machine.executeRequest(2, key: a)
        _ = machine.connectionEstablished(1)
        #expect(machine.requestFinished(on: 1, reusable: false) == [.closeConnection(1), .createConnection(2, a)])
    }

    @Test func failedConnectionFailsTheOldestWaitingRequestAndRetriesForTheRest() {
        var machine = Machine(maximumConnectionsPerKey: 1)
        _ = machine.executeRequest(1, key: a)
        _ = machine.executeRequest(2, key: a)
        #expect(machine.connectionFailed(1) == [.failRequest(1, .connectionFailed(1)), .createConnection(2, a)])
    }

    @Test func closeWhileConnectingIsLeftToTheConnectFailure() {
        var machine = Machine(maximumConnectionsPerKey: 1)
        _ = machine.executeRequest(1, key: a)
        #expect(machine.connectionClosed(1) == [])
        #expect(machine.connectionFailed(1) == [.failRequest(1, .connectionFailed(1))])
    }

    @Test func idleConnectionClosedByTheServerIsForgotten() {
        var machine = machineWithIdleConnection()
        #expect(machine.connectionClosed(1) == [])
        #expect(machine.executeRequest(2, key: a) == [.createConnection(2, a)])
    }

    @Test func idleTimeoutClosesAConnectionIdleSinceThatTimer() {
        var machine = machineWithIdleConnection()
        #expect(machine.idleTimeoutFired(1, epoch: 1) == [.closeConnection(1)])
        #expect(machine.connectionCount(for: a) == 0)
    }

    @Test func connectionThatServedSinceTheTimerGetsOneTimerForItsNewIdlePeriod() {
        var machine = machineWithIdleConnection()
        _ = machine.executeRequest(2, key: a)
        // Idle again: the first timer is still pending, so no second one.
        #expect(machine.requestFinished(on: 1, reusable: true) == [])
        #expect(machine.idleTimeoutFired(1, epoch: 1) == [.scheduleIdleTimeout(1, epoch: 2)])
        #expect(machine.idleTimeoutFired(1, epoch: 2) == [.closeConnection(1)])
    }

    @Test func idleTimeoutLeavesABusyConnectionAlone() {
        var machine = machineWithIdleConnection()
        _ = machine.executeRequest(2, key: a)
        #expect(machine.idleTimeoutFired(1, epoch: 1) == [])
        #expect(machine.requestFinished(on: 1, reusable: true) == [.scheduleIdleTimeout(1, epoch: 2)])
    }

    @Test func retryNeverGetsAConnectionThatServedBefore() {
        var machine = machineWithIdleConnection(limit: 2)
        #expect(machine.executeRequest(2, key: a, needsFreshConnection: true) == [.createConnection(2, a)])
        #expect(machine.connectionEstablished(2) == [.execute(2, on: 2, reused: false)])
    }

    @Test func retryAtTheLimitReplacesAnIdleConnection() {
        var machine = machineWithIdleConnection(limit: 1)
        #expect(machine.executeRequest(2, key: a, needsFreshConnection: true) == [.closeConnection(1), .createConnection(2, a)])
    }

    @Test func cancelledWaitingRequestFailsAndLeavesTheQueue() {
        var machine = Machine(maximumConnectionsPerKey: 1)
        _ = machine.executeRequest(1, key: a)
        _ = machine.executeRequest(2, key: a)
        #expect(machine.cancelRequest(2) == [.failRequest(2, .cancelled)])
        _ = machine.connectionEstablished(1)
        #expect(machine.requestFinished(on: 1, reusable: true) == [.scheduleIdleTimeout(1, epoch: 1)])
    }

    @Test func revokedIdleConnectionClosesAtOnce() {
        var machine = machineWithIdleConnection()
        #expect(machine.pinsChanged(revoked: [1]) == [.closeConnection(1)])
        #expect(machine.executeRequest(2, key: a) == [.createConnection(2, a)])
    }

    @Test func revokedBusyConnectionCarriesNoFurtherRequest() {
        var machine = Machine(maximumConnectionsPerKey: 1)
        _ = machine.executeRequest(1, key: a)
        _ = machine.connectionEstablished(1)
        _ = machine.executeRequest(2, key: a)
        #expect(machine.pinsChanged(revoked: [1]) == [])
        // Reusable as far as HTTP goes, but revoked: closed, and request 2 gets a new connection.
        #expect(machine.requestFinished(on: 1, reusable: true) == [.closeConnection(1), .createConnection(2, a)])
    }

    @Test func connectionsStillPinnedAreKeptAfterAListChange() {
        var machine = machineWithIdleConnection()
        #expect(machine.pinsChanged(revoked: []) == [])
        #expect(machine.executeRequest(2, key: a) == [.execute(2, on: 1, reused: true)])
    }

    @Test func shutDownFailsWaitingRequestsAndClosesIdleConnections() {
        var machine = machineWithIdleConnection(limit: 2)
        _ = machine.executeRequest(2, key: b)
        #expect(machine.shutDown() == [.failRequest(2, .shutDown), .closeConnection(1)])
        #expect(machine.executeRequest(3, key: a) == [.failRequest(3, .shutDown)])
    }

    // MARK: HTTP/2

    @Test func http2ConnectionCarriesEveryWaitingRequestAtOnce() {
        var machine = Machine(maximumConnectionsPerKey: 1)
        _ = machine.executeRequest(1, key: a)
        _ = machine.executeRequest(2, key: a)
        _ = machine.executeRequest(3, key: a)
        #expect(machine.connectionEstablished(1, capacity: 100) == [
            .execute(1, on: 1, reused: false), .execute(2, on: 1, reused: true), .execute(3, on: 1, reused: true),
        ])
        #expect(machine.executeRequest(4, key: a) == [.execute(4, on: 1, reused: true)])
    }

    @Test func onceAKeySpeaksHTTP2OneConnectionIsOpenedAtATime() {
        var machine = Machine(maximumConnectionsPerKey: 6)
        _ = machine.executeRequest(1, key: a)
        _ = machine.connectionEstablished(1, capacity: 100)
        _ = machine.requestFinished(on: 1, reusable: true)
        _ = machine.connectionClosed(1)
        #expect(machine.executeRequest(2, key: a) == [.createConnection(2, a)])
        #expect(machine.executeRequest(3, key: a) == [])
        #expect(machine.connectionCount(for: a) == 1)
    }

    @Test func http2ConnectionAtCapacityQueuesTheRestUntilAStreamEnds() {
        var machine = Machine(maximumConnectionsPerKey: 1)
        _ = machine.executeRequest(1, key: a)
        _ = machine.executeRequest(2, key: a)
        _ = machine.executeRequest(3, key: a)
        _ = machine.connectionEstablished(1, capacity: 2)
        #expect(machine.waitingCount == 1)
        #expect(machine.requestFinished(on: 1, reusable: true) == [.execute(3, on: 1, reused: true)])
    }

    @Test func revokedHTTP2ConnectionTakesNoNewStreamAndClosesAfterItsLast() {
        var machine = Machine(maximumConnectionsPerKey: 1)
        _ = machine.executeRequest(1, key: a)
        _ = machine.executeRequest(2, key: a)
        _ = machine.connectionEstablished(1, capacity: 100)
        #expect(machine.pinsChanged(revoked: [1]) == [])
        #expect(machine.executeRequest(3, key: a) == [])
        #expect(machine.requestFinished(on: 1, reusable: true) == [])
        #expect(machine.requestFinished(on: 1, reusable: true) == [.closeConnection(1), .createConnection(2, a)])
    }
}
