import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PinStore
import PinStoreNIO

/// The pin check of one pinned gRPC transport, and the connections it admitted.
///
/// gRPC calls ``initializer(then:)``'s closure on every new TCP connection, before it connects.
/// It puts a swift-nio-ssl client handler first in the pipeline, made by
/// `PinningTLSVerifier.makeClientHandler`, so the handshake runs the NIO verifier's whole
/// decision (chain, dates and host name against the trust roots, ATS minimums, deny pins, CA
/// pins, Certificate Transparency) and fails before any gRPC byte leaves for a refused
/// server; then a ``PinnedGRPCConnectionGate`` between TLS and HTTP/2. An admitted connection
/// is remembered until it closes, so a list update that withdraws its pin closes it
/// (``listChanged()``), and its gate refuses a write made under a list it has not been
/// checked against.
@available(macOS 15.0, *)
final class PinnedGRPCConnections: Sendable {
    let verifier: PinningTLSVerifier
    let serverName: PinnedGRPCServerName
    let context: NIOSSLContext
    let logger: Logger
    private let admitted = Locked<[ObjectIdentifier: Admitted]>([:])
    private let listChangeToken = Locked<UInt64?>(nil)

    var store: PinStore { verifier.evaluator.store }

    /// An admitted connection: what its pin check is repeated over, and how to retire it.
    struct Admitted: Sendable {
        let channel: any Channel
        /// The chain the trust evaluation validated, and the host it was validated for.
        let evidence: AdmissionGate.Evidence
        /// Closes the connection with the failure (hops to its event loop).
        let retire: @Sendable (PinningFailure) -> Void
    }

    /// Closes started by list changes and not yet awaited (``closesSettled()``).
    private let pendingCloses = Locked<[EventLoopFuture<Void>]>([])

    init(verifier: PinningTLSVerifier, serverName: PinnedGRPCServerName, context: NIOSSLContext, logger: Logger) {
        self.verifier = verifier
        self.serverName = serverName
        self.context = context
        self.logger = logger
        // Weak: the store outlives transports; the handler goes when the transport does.
        let token = verifier.evaluator.store.addListChangeHandler({ [weak self] in self?.listChanged() },
                                                                 settled: { [weak self] in await self?.closesSettled() })
        listChangeToken.withLock { $0 = token }
    }

    deinit {
        if let token = listChangeToken.withLock({ $0 }) { store.removeListChangeHandler(token) }
    }

    /// The connection initializer: the pinned TLS handler and the gate, then `next` (one the
    /// configuration already had).
    func initializer(then next: (@Sendable (any Channel) -> EventLoopFuture<Void>)?) -> @Sendable (any Channel) -> EventLoopFuture<Void> {
        { [self] channel in
            let prepared = channel.eventLoop.makeCompletedFuture { try self.prepare(channel) }
            guard let next else { return prepared }
            return prepared.flatMap { next(channel) }
        }
    }

    /// Puts the pinned TLS handler first in `channel`'s pipeline and the gate right after it.
    private func prepare(_ channel: any Channel) throws {
        // Read before the handshake (and so before its pin check): a list installed after this
        // is checked for again by the gate once the handshake is done.
        let generation = store.listGeneration
        let decision = PinnedGRPCConnectionGate.Decision()
        let tls = try verifier.makeClientHandler(context: context, host: serverName.name, port: serverName.port,
                                                 onAdmission: { decision.record($0, evidence: $1) })
        let gate = PinnedGRPCConnectionGate(connections: self, decision: decision, generation: generation)
        try channel.pipeline.syncOperations.addHandler(tls, position: .first)
        try channel.pipeline.syncOperations.addHandler(gate, position: .after(tls))
    }

    /// Remembers a connection whose handshake the pin check admitted, until it closes.
    func admit(_ connection: Admitted) {
        let id = ObjectIdentifier(connection.channel)
        admitted.withLock { $0[id] = connection }
        connection.channel.closeFuture.whenComplete { [weak self] _ in
            _ = self?.admitted.withLock { $0.removeValue(forKey: id) }
        }
    }

    /// After a list change: retires every admitted connection whose chain the new list no
    /// longer admits for the host. An RPC racing with the close is stopped by the gate.
    ///
    /// Called by the store before its update returns. Off the event loops it also waits for the
    /// closes (gRPC's channel then opens a new connection for the next RPC, whose handshake the
    /// new list decides).
    func listChanged() {
        let connections = admitted.withLock { Array($0.values) }
        var closing: [EventLoopFuture<Void>] = []
        // Never a blocking wait here (the handler may run on an event loop or the download
        // task): the store's update awaits the closes through closesSettled() instead.
        defer { if !closing.isEmpty { pendingCloses.withLock { $0.append(contentsOf: closing) } } }
        // Every connection of a transport is for one host, and most share one chain: one
        // decision per distinct chain.
        var verdicts: [[Data]: PinningFailure?] = [:]
        for connection in connections {
            let chain: [Data]
            if case .chain(let validated, _) = connection.evidence { chain = validated.certificates } else { chain = [] }
            let failure: PinningFailure?
            if !chain.isEmpty, let known = verdicts[chain] {
                failure = known
            } else {
                failure = store.refusal(of: connection.evidence)
                verdicts[chain] = failure
            }
            guard let failure else { continue }
            logger.debug("closing a pinned gRPC connection the new list no longer allows",
                         metadata: ["pinstore.host": "\(serverName.host)", "pinstore.reason": "\(failure)"])
            connection.retire(failure)
            closing.append(connection.channel.closeFuture)
        }
    }

    /// Awaits the closes the last list changes started (the store's update awaits this before
    /// it returns, so an RPC made after it opens a connection the new list decides).
    func closesSettled() async {
        let futures = pendingCloses.withLock { pending in
            defer { pending.removeAll() }
            return pending
        }
        for future in futures { try? await future.get() }
    }

    /// How many admitted connections are open (tests).
    var admittedCount: Int {
        admitted.withLock { $0.count }
    }
}
