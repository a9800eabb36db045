import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PinStore
import PinStoreNIO

/// The pin check of one pinned `HTTPClient.Configuration`, and the connections it admitted.
///
/// AsyncHTTPClient calls ``initializer(then:)``'s closure on every new connection after the TLS
/// handshake and its default verification, and schedules no request on the connection until
/// the returned future succeeds. A refused connection is closed and the future fails with the
/// `PinningFailure`. An admitted one gets an ``AdmissionGateHandler`` (the `AdmissionGate`
/// the pinned URLSession's pool uses too) and is remembered until it closes, so a list update
/// that withdraws its pin closes it (``listChanged()``).
final class PinnedConnections: Sendable {
    let store: PinStore
    let updateOnEmpty: Bool
    let updateOnMismatch: Bool
    let logger: Logger
    private let admitted = Locked<[ObjectIdentifier: Admitted]>([:])
    private let listChangeToken = Locked<UInt64?>(nil)
    /// The closes ``listChanged()`` started and nobody has awaited yet.
    private let closing = Locked<[EventLoopFuture<Void>]>([])

    struct Admitted: Sendable {
        let channel: any Channel
        let leaf: Data
        let peerAddress: String?

        /// What the decision depends on.
        struct Key: Hashable {
            let leaf: Data
            let peerAddress: String?
        }

        var key: Key { Key(leaf: leaf, peerAddress: peerAddress) }
    }

    init(store: PinStore, updateOnEmpty: Bool, updateOnMismatch: Bool, logger: Logger?) {
        self.store = store
        self.updateOnEmpty = updateOnEmpty
        self.updateOnMismatch = updateOnMismatch
        self.logger = logger ?? Logger(label: "PinStoreAsyncHTTPClient", factory: { _ in SwiftLogNoOpLogHandler() })
        // Weak: the store outlives clients; the handler goes when the configuration does.
        let token = store.addListChangeHandler({ [weak self] in self?.listChanged() },
                                               settled: { [weak self] in await self?.closesSettled() })
        listChangeToken.withLock { $0 = token }
    }

    deinit {
        if let token = listChangeToken.withLock({ $0 }) { store.removeListChangeHandler(token) }
    }

    /// The connection initializer: the pin check, then `next` (one the configuration already had).
    func initializer(then next: (@Sendable (any Channel) -> EventLoopFuture<Void>)?) -> @Sendable (any Channel) -> EventLoopFuture<Void> {
        { [self] channel in
            let checked = admit(channel)
            guard let next else { return checked }
            return checked.flatMap { next(channel) }
        }
    }

    /// Decides on `channel`; the future succeeds only for an admitted connection.
    func admit(_ channel: any Channel) -> EventLoopFuture<Void> {
        guard channel.eventLoop.inEventLoop else {
            return channel.eventLoop.flatSubmit { self.admit(channel) }
        }
        let leaf: Data
        do {
            leaf = try peerLeaf(channel)
        } catch {
            logger.debug("pinned HTTPClient refused a connection", metadata: ["pinstore.reason": "\(error)"])
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(error)
        }
        if let failure = transportSecurityFailure(channel, leaf: leaf) {
            store.record(.deny(failure), host: failure.host)
            logger.debug("pinned HTTPClient refused a connection", metadata: ["pinstore.host": "\(failure.host)", "pinstore.reason": "\(failure)"])
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(failure)
        }
        // The list generation the decision is made under, read before it: a list installed
        // while the decision (or the update after a refusal) runs is then seen by the
        // connection's gate, which checks the leaf again before the first byte goes out.
        let generation = store.listGeneration
        let peerAddress = channel.remoteAddress?.ipAddress
        switch store.leafStep(leaf: leaf, peerAddress: peerAddress, port: channel.remoteAddress?.port,
                              updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch) {
        case .decided(let decision):
            return conclude(decision, channel: channel, leaf: leaf, peerAddress: peerAddress, generation: generation)
        case .updateFirst(let pending):
            // The update runs off the event loop; the connection waits, unused, meanwhile.
            let promise = channel.eventLoop.makePromise(of: PinningDecision.self)
            promise.completeWithTask { await pending.decideAfterUpdate() }
            return promise.futureResult.flatMap {
                self.conclude($0, channel: channel, leaf: leaf, peerAddress: peerAddress, generation: generation)
            }
        }
    }

    /// ATS's minimums this adapter can see: the negotiated TLS version, and the leaf's key size
    /// and signature digest, against the strictest requirements of every host the leaf's names
    /// cover (the host the connection was opened for is not visible here).
    private func transportSecurityFailure(_ channel: any Channel, leaf: Data) -> PinningFailure? {
        guard let certificate = try? X509Certificate(derRepresentation: leaf) else {
            return PinningFailure(host: "?", reason: .transportSecurityNotMet(TransportSecurityViolation(
                requirement: .certificateKeySize, depth: 0, detail: "the leaf certificate could not be read")))
        }
        let host = certificate.dnsNames.first ?? certificate.ipAddresses.first ?? certificate.commonName ?? "?"
        let requirements = store.transportSecurity.requirements(forLeafDNSNames: certificate.dnsNames, ipAddresses: certificate.ipAddresses)
        let negotiated = (try? channel.pipeline.syncOperations.nioSSL_tlsVersion()).flatMap { $0 }.map(TLSProtocolVersion.init)
        guard let negotiated else {
            return PinningFailure(host: host, reason: .transportSecurityNotMet(TransportSecurityViolation(
                requirement: .minimumTLSVersion, detail: "the negotiated TLS version could not be read")))
        }
        if negotiated < requirements.minimumTLSVersion {
            return PinningFailure(host: host, reason: .transportSecurityNotMet(TransportSecurityViolation(
                requirement: .minimumTLSVersion, detail: "\(negotiated.rawValue) was negotiated; \(requirements.minimumTLSVersion.rawValue) or later is required")))
        }
        if requirements.checksCertificateStrength, let violation = CertificateStrengthPolicy.check(leaf: leaf) {
            return PinningFailure(host: host, reason: .transportSecurityNotMet(violation))
        }
        return nil
    }

    /// The leaf the handshake verified, as DER.
    private func peerLeaf(_ channel: any Channel) throws(PinnedHTTPClientError) -> Data {
        let certificate: NIOSSLCertificate?
        do {
            certificate = try channel.pipeline.syncOperations.nioSSL_peerCertificate()
        } catch {
            throw .unencryptedConnection
        }
        guard let certificate, let der = try? certificate.toDERBytes(), !der.isEmpty else {
            throw .noPeerCertificate
        }
        return Data(der)
    }

    /// Admits or closes the connection (on its event loop) after its decision, already reported.
    private func conclude(_ decision: PinningDecision, channel: any Channel, leaf: Data, peerAddress: String?,
                          generation: UInt64) -> EventLoopFuture<Void> {
        if case .deny(let failure) = decision {
            logger.debug("pinned HTTPClient refused a connection",
                         metadata: ["pinstore.host": "\(failure.host)", "pinstore.reason": "\(failure)"])
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(failure)
        }
        do {
            let tls = try channel.pipeline.syncOperations.handler(type: NIOSSLHandler.self)
            let gate = AdmissionGate(evidence: .leaf(leaf, peerAddress: peerAddress), admittedUnder: generation)
            try channel.pipeline.syncOperations.addHandler(AdmissionGateHandler(store: store, gate: gate), position: .after(tls))
        } catch {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(error)
        }
        remember(channel, leaf: leaf, peerAddress: peerAddress)
        return channel.eventLoop.makeSucceededVoidFuture()
    }

    /// Keeps `channel` among the admitted connections until it closes.
    func remember(_ channel: any Channel, leaf: Data, peerAddress: String?) {
        let id = ObjectIdentifier(channel)
        admitted.withLock { $0[id] = Admitted(channel: channel, leaf: leaf, peerAddress: peerAddress) }
        channel.closeFuture.whenComplete { [weak self] _ in
            _ = self?.admitted.withLock { $0.removeValue(forKey: id) }
        }
    }

    /// After a list change: starts closing every admitted connection whose leaf the new list
    /// no longer allows, and returns without waiting for the closes (the store calls it from
    /// its update, on a download task or an event loop: neither may block on a channel). The
    /// store's `update()` awaits them (``closesSettled()``) before it returns, so AsyncHTTPClient
    /// has dropped those connections by then; a request leased to one before that is stopped
    /// by the connection's ``AdmissionGateHandler``, which re-checks before the first byte.
    func listChanged() {
        let connections = admitted.withLock { Array($0.values) }
        var verdicts: [Admitted.Key: Bool] = [:]
        for connection in connections {
            let allowed: Bool
            if let known = verdicts[connection.key] {
                allowed = known
            } else {
                allowed = store.stillAdmits(.leaf(connection.leaf, peerAddress: connection.peerAddress))
                verdicts[connection.key] = allowed
            }
            guard !allowed else { continue }
            logger.debug("closing a pinned connection the new list no longer allows")
            connection.channel.close(promise: nil)
            closing.withLock { $0.append(connection.channel.closeFuture) }
        }
    }

    /// Waits, without blocking a thread, for the closes ``listChanged()`` started.
    func closesSettled() async {
        let futures = closing.withLock { futures in
            defer { futures.removeAll() }
            return futures
        }
        for future in futures { try? await future.get() }
    }

    /// How many admitted connections are open (tests).
    var admittedCount: Int {
        admitted.withLock { $0.count }
    }
}

/// Sits between AsyncHTTPClient's HTTP handlers and TLS on an admitted connection and asks the
/// connection's ``AdmissionGate`` before letting a byte out: when the list has changed since
/// the connection was admitted, the leaf is checked again first, so a connection whose pin was
/// withdrawn never carries another request, even one scheduled in the moment before
/// ``PinnedConnections/listChanged()`` closed it.
final class AdmissionGateHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    private let store: PinStore
    private var gate: AdmissionGate
    private var refusal: PinningFailure?

    init(store: PinStore, gate: AdmissionGate) {
        self.store = store
        self.gate = gate
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Requests on a pooled connection make no pin check: keep the store on its schedule.
        store.noteUse()
        if refusal == nil, store.admit(&gate).verdict != .admit {
            // The reason a new connection would be refused with (reported there, not here).
            let failure = store.refusal(of: gate.evidence) ?? PinningFailure(host: "?", reason: .pinMismatch)
            refusal = failure
            context.close(promise: nil)
        }
        if let refusal {
            promise?.fail(refusal)
            return
        }
        context.write(data, promise: promise)
    }
}
