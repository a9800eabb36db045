import ArgumentParser
import Dispatch
import Foundation
import PinStore
import PinStoreSigning
import PinStoreDevServer

/// `pinstore serve`: a development list server on 127.0.0.1.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a fingerprint list on 127.0.0.1 for development and tests.",
        discussion: """
            Static mode serves the signed list as it is, after checking that it verifies with \
            --key's public key. --challenge-mode answers like the deployed challenge-mode server: \
            every request must carry X-Cert-Pinning-Challenge (Base64 of 16 to 32 bytes) and the \
            response carries X-Cert-Pinning-Signature over challenge & body, signed with --key. \
            For a key set with a threshold, repeat --key: the first key signs \
            X-Cert-Pinning-Signature, each further key adds its labelled signature to \
            X-PinStore-Signatures, so a store configured with signatureThreshold k accepts the \
            responses of a server given k of its keys. A static list given in challenge mode is \
            served as a challenge-mode body stamped with the start time.

            A static list must verify as apps verify it: with --key's public key, or with the key \
            set apps configure (repeat --public-key) and --threshold.

            The list answers at /, /list.json and /<file name>; other paths get 404. The file is \
            read again when it changes, so a re-signed list is served without a restart. A new \
            version apps would refuse (one that does not verify with the key set, or a static \
            list whose version is lower than the one served, or missing after one was served) is \
            reported and the previous one kept.

            A static list and the key documents are sent with ETag (the SHA-256 of the bytes), \
            Last-Modified (when the server first served these bytes; a reload with the same \
            bytes keeps both) and Cache-Control: public, max-age=60, must-revalidate, the value \
            a CDN in front of the list should keep; a GET with a matching If-None-Match, or \
            without one and with an If-Modified-Since not before Last-Modified, gets 304 Not \
            Modified. Challenge-mode responses are never 304 and carry Cache-Control: no-store.

            Listens on 127.0.0.1 only; --port 0 picks a free port. Prints the URL, logs each \
            request, and runs until interrupted (Ctrl-C) or terminated.

            Examples:
              pinstore serve --key list-signing.key.pem --list list.json --port 8080
              pinstore serve --key a.key.pem --public-key a.pub.pem --public-key b.pub.pem --threshold 2 --list list.json
              pinstore serve --key list-signing.key.pem --list list.json --challenge-mode --port 0
              pinstore serve --key a.key.pem --key b.key.pem --list list.json --challenge-mode --port 0
              pinstore serve --key k.pem --list list.json --tls-cert localhost-chain.pem --tls-key localhost.key.pem --port 8443
            """
    )

    @Option(help: "The list-signing private key (PEM). Repeat in challenge mode for a key set with a threshold: the first key signs X-Cert-Pinning-Signature, the others add labelled signatures (X-PinStore-Signatures). In static mode one key: the list is served as signed.")
    var key: [String]

    @Option(help: "A file whose first line decrypts the key.")
    var passphraseFile: String?

    @Option(help: "The list to serve (a signed static list, or a challenge-mode body).")
    var list: String

    @Flag(help: "Sign every response over the client's challenge.")
    var challengeMode = false

    @Option(help: "Static mode: a public key apps configure, inline or as a file; repeat for a key set. Lists are checked against these instead of --key's public key.")
    var publicKey: [String] = []

    @Option(help: "Static mode: how many distinct keys of the set (--public-key) must have signed the list.")
    var threshold: Int = 1

    @Option(help: "A key document file (`pinstore keys`) to serve at /keys.json, beside the list. Read on every request, so a new version is published by replacing the file.")
    var keyDocuments: String?

    @Option(help: "PEM certificate chain (leaf first) to serve https.")
    var tlsCert: String?

    @Option(help: "PEM private key of the TLS leaf.")
    var tlsKey: String?

    @Option(help: "TCP port on 127.0.0.1 (0 picks a free one).")
    var port: Int = 8080

    func validate() throws {
        if key.isEmpty {
            throw ValidationError("Give at least one --key.")
        }
        if key.count > 1, !challengeMode {
            // A static list carries its signatures already (`pinstore sign` with several
            // --key); the server adds none, so further keys would only look as if they did.
            throw ValidationError("Several --key sign challenge-mode responses; a static list is served as signed (sign it with several keys: pinstore sign --key a.pem --key b.pem).")
        }
        if challengeMode, !publicKey.isEmpty || threshold != 1 {
            throw ValidationError("--public-key and --threshold describe what a static list must be signed by; in challenge mode the server signs each response with --key.")
        }
        if threshold < 1 || threshold > max(publicKey.count, 1) {
            throw ValidationError("--threshold \(threshold) needs between 1 and the \(max(publicKey.count, 1)) key(s) of the set (repeat --public-key).")
        }
        if (tlsCert == nil) != (tlsKey == nil) {
            throw ValidationError("--tls-cert and --tls-key go together.")
        }
        guard (0...65_535).contains(port) else {
            throw ValidationError("--port \(port) is not a TCP port (0 picks a free one).")
        }
    }

    /// One version of the list file, ready to serve.
    struct ServedList: Sendable {
        let responder: ListServerResponder
        /// The mode, for the start-up line.
        let description: String
        let entryCount: Int
        /// The signed `version` of a static list (nil without one, and in challenge mode).
        let version: Int64?
    }

    /// Why apps holding `previous` would refuse `next` as a rollback (the rule of
    /// `ListAcceptance.checkRollback`), or nil. A lower version, or none after one, is refused;
    /// serving it would leave every app on the previous list while the operator believes the
    /// new one is out.
    static func rollbackRefusal(previous: Int64?, next: Int64?) -> String? {
        guard let previous else { return nil }
        guard let next else {
            return "it has no signed version, and the list served before has version \(previous): apps refuse it as a possible rollback (sign it with --list-version \(previous + 1))"
        }
        guard next >= previous else {
            return "its version \(next) is lower than the \(previous) of the list served before: apps refuse it as a rollback (sign it with --list-version \(previous + 1))"
        }
        return nil
    }

    /// One version of the list file, ready to serve; throws when apps would refuse it.
    /// `tracker` is shared by every version, so one with the same bytes keeps its validators.
    private func makeResponder(for fileBody: Data, signingKeys: [P256PrivateKey], listKeys: [P256PublicKey],
                               tracker: RepresentationTracker) throws -> ServedList {
        // validate() guarantees one key at least.
        guard let signingKey = signingKeys.first else { throw CLIError("Give at least one --key.") }
        let parsed: ListReadBack.List
        do {
            parsed = try ListReadBack.parse(fileBody)
        } catch {
            throw CLIError("\(list): not a fingerprint list apps accept", error)
        }
        if challengeMode {
            var body = fileBody
            if parsed.timestamp == nil {
                do {
                    body = try FingerprintListSigner.challengeModeBody(parsed.entries.map(\.entry), timestamp: Int64(Date().timeIntervalSince1970))
                } catch {
                    throw CLIError("\(list): cannot make a challenge-mode body", error)
                }
            }
            let description = signingKeys.count == 1 ? "challenge mode" : "challenge mode, signed by \(signingKeys.count) keys"
            return ServedList(responder: ListResponders.challengeList(body: body, signingKey: signingKey, additionalKeys: Array(signingKeys.dropFirst())),
                              description: description, entryCount: parsed.entries.count, version: nil)
        }
        // As a store configured with this key set verifies it (whole-list signatures from
        // `threshold` distinct keys of the set).
        let verified: (entries: [FingerprintEntry], version: Int64?, expires: Int64?, timestamp: Int64?)
        do {
            verified = try KeyDocumentTools.verifyStaticList(fileBody, keys: listKeys, threshold: threshold)
        } catch {
            let keys = publicKey.isEmpty ? "the public key of \(key[0])" : "\(threshold) of the \(listKeys.count) --public-key keys"
            throw CLIError("\(list) does not verify with \(keys); apps would refuse it (sign it with these keys, or use --challenge-mode)", error)
        }
        return ServedList(responder: ListResponders.staticList(fileBody, tracker: tracker), description: "static mode",
                          entryCount: parsed.entries.count, version: verified.version)
    }

    /// The paths the list answers at: `/`, `/list.json` and `/<the list file's name>`.
    /// Anything else is 404, so a typo in an app's `serviceURL` shows at once.
    private var listPaths: Set<String> {
        ["/", "/list.json", "/" + URL(fileURLWithPath: list).lastPathComponent]
    }

    func run() async throws {
        let signingKeys = try key.map { try InputFiles.privateKey($0, passphraseFile: passphraseFile) }
        // The key set apps verify a static list with: --public-key, else --key's public key.
        let listKeys = try publicKey.isEmpty ? signingKeys.prefix(1).map { try $0.publicKey } : publicKey.map(InputFiles.publicKey)
        let fileBody = try InputFiles.data(list, what: "list file")
        // One tracker for every version of the list file: a reload that brings the same bytes
        // (a touch, a rewrite) keeps ETag and Last-Modified, so caches keep getting 304.
        let listTracker = RepresentationTracker()
        let first = try makeResponder(for: fileBody, signingKeys: signingKeys, listKeys: listKeys, tracker: listTracker)
        let (description, entryCount) = (first.description, first.entryCount)
        // The list file is read again whenever it changes (size, modification time or inode):
        // a re-signed list is published without a restart. A new version apps would refuse is
        // reported and not served; the last good one stays.
        let listFile = list
        let current = Locked((stamp: FileStamp(path: listFile), list: first))
        let rebuild: @Sendable (Data) throws -> ServedList = { [self] body in
            try self.makeResponder(for: body, signingKeys: signingKeys, listKeys: listKeys, tracker: listTracker)
        }
        let responder: ListServerResponder = { request in
            let stamp = FileStamp(path: listFile)
            let (changed, served) = current.withLock { ($0.stamp != stamp, $0.list) }
            guard changed else { return served.responder(request) }
            do {
                let next = try rebuild(try InputFiles.data(listFile, what: "list file"))
                if let refusal = Self.rollbackRefusal(previous: served.version, next: next.version) {
                    throw CLIError(refusal)
                }
                current.withLock { $0 = (stamp, next) }
                Console.print("reloaded \(listFile)")
                return next.responder(request)
            } catch {
                current.withLock { $0.stamp = stamp }   // report a bad version once
                Console.printError("not serving the changed \(listFile), still serving the previous version: \(error)")
                return served.responder(request)
            }
        }
        let tls: ListServerTLS?
        if let tlsCert, let tlsKey {
            do {
                tls = try ListServerTLS(certificateChainFile: tlsCert, privateKeyFile: tlsKey)
            } catch {
                throw CLIError("\(error)")
            }
        } else {
            tls = nil
        }
        var served = responder
        if let keyDocuments {
            let path = keyDocuments
            do {
                _ = try KeyDocumentTools.verify(try InputFiles.data(path, what: "key document file"), keys: nil, threshold: 1,
                                                trustedVersion: 0, now: Date())
            } catch {
                throw CLIError("\(path): stores would refuse these key documents", error)
            }
            served = ListResponders.withKeyDocuments({ (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data() }, list: responder)
        }
        let paths = listPaths
        let keyDocumentsServed = keyDocuments != nil
        let logged: ListServerResponder = { [served] request in
            let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.uri
            let known = paths.contains(path) || (keyDocumentsServed && path == ListResponders.keyDocumentPath)
            let response = known ? served(request)
                : ListServerResponse(status: 404, headers: [("Content-Type", "text/plain; charset=utf-8")],
                                     body: Data("not found: the list is served at \(paths.sorted().joined(separator: ", "))\n".utf8))
            Console.print("\(request.method) \(request.uri) -> \(response.status)")
            return response
        }
        // Watch for signals before the address is printed: whoever reads the address may send
        // a signal at once, and one arriving before the watcher exists would be lost.
        let running = Locked<(server: ListServer?, stopRequested: Bool)>((nil, false))
        let signals = SignalWatcher(signals: [SIGINT, SIGTERM]) {
            let server = running.withLock { state -> ListServer? in
                state.stopRequested = true
                return state.server
            }
            Task { try? await server?.shutdown() }
        }
        defer { signals.cancel() }
        let server: ListServer
        do {
            server = try await ListServer.start(port: port, tls: tls, responder: logged)
        } catch {
            throw CLIError("\(error)")
        }
        if running.withLock({ state -> Bool in
            state.server = server
            return state.stopRequested
        }) {
            try? await server.shutdown()
        }
        let publicKeys = try signingKeys.map { try $0.publicKey.x963Representation.base64EncodedString() }
        Console.print("serving \(list) (\(description), \(entryCount) entr\(entryCount == 1 ? "y" : "ies")) at \(server.baseURL.absoluteString)/\(URL(fileURLWithPath: list).lastPathComponent)")
        Console.print("the file is read again when it changes: re-sign it to publish, no restart")
        for publicKey in publicKeys {
            Console.print("public key: \(publicKey)")
        }
        if keyDocuments != nil {
            Console.print("key documents: \(server.baseURL.absoluteString)\(ListResponders.keyDocumentPath)")
        }
        Console.print("press Ctrl-C to stop")

        try? await server.waitUntilClosed()
        try? await server.shutdown()
        Console.print("stopped")
    }
}

/// The write end of the self-pipe the C signal handler writes to (set once, before any handler
/// is installed; a signal handler can capture nothing, so it has to be a global).
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// Runs a handler when one of the given signals arrives (instead of the default termination),
/// so that the server can close its socket and exit cleanly.
///
/// A real handler, not `SIG_IGN` plus a dispatch signal source: on Linux libdispatch sees a
/// signal only if the thread the kernel delivers it to has it blocked, and threads started
/// earlier (the concurrency pool) do not, so with `SIG_IGN` a signal could be dropped. The
/// handler only writes one byte to a pipe (async-signal-safe); a read source does the rest.
final class SignalWatcher {
    private let source: (any DispatchSourceRead)?

    init(signals: [Int32], handler: @escaping @Sendable () -> Void) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            source = nil
            return
        }
        signalPipeWriteEnd = ends[1]
        let readEnd = ends[0]
        let source = DispatchSource.makeReadSource(fileDescriptor: readEnd, queue: .global())
        source.setEventHandler {
            var byte: UInt8 = 0
            _ = read(readEnd, &byte, 1)
            handler()
        }
        source.resume()
        self.source = source
        for number in signals {
            signal(number) { _ in
                var byte: UInt8 = 1
                _ = write(signalPipeWriteEnd, &byte, 1)
            }
        }
    }

    func cancel() {
        source?.cancel()
    }
}

/// What identifies one version of a file without reading it: size, modification time, inode.
struct FileStamp: Equatable, Sendable {
    let size: UInt64?
    let modified: Date?
    let inode: UInt64?

    init(path: String) {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        size = (attributes?[.size] as? NSNumber)?.uint64Value
        modified = attributes?[.modificationDate] as? Date
        inode = (attributes?[.systemFileNumber] as? NSNumber)?.uint64Value
    }
}
