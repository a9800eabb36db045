import ArgumentParser
import Foundation
import Logging
import PinStore
import PinStorePublisher
import ServiceLifecycle

/// `pinstore publish`: the publisher that keeps the signed list ahead of partners' certificate
/// rotations (the PinStorePublisher library), as a service, a cron round and the commands a
/// person uses around it.
struct PublishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Keep a signed list current by itself: probe partners, apply the rules, publish.",
        discussion: """
            Every subcommand reads the publication file (--file, publication.json by default) \
            and the state file in its stateFolder. `run` is the long-lived service; `once` is \
            one round for cron. `announce` pins a key that is not deployed yet; `pending` lists \
            what is staged for a person and `approve` signs one of them with a key clients or \
            the file trust.

            Exit codes of `status`, `once` and `pending`, for cron jobs and CI (the most serious \
            condition wins):
              0  a list is published, no change waits for a person, every partner answered
              1  the command failed (publication file, state file, signing key: see the message)
              2  a change waits for a person (`pinstore publish pending`)
              3  a partner's last probe reached none of its addresses, or it was never probed
              4  the list is not being re-signed in time: none is published, it has expired, \
            or its re-signing is overdue by more than two probe intervals (at most half of \
            expires - resignInterval); a short `expires` re-signed on schedule is fine
            `once` also exits 1 when its round could not publish (the last good list stays served) \
            or its afterPublish command failed (it runs again next round).

            `announce` exits 0 only once a published list carries the key: 1 when nothing was \
            recorded, 5 when the announcement is recorded but no published list carries it yet \
            (the output folder is full or read-only, signing failed, other vantage points \
            have not co-signed, or the afterPublish command failed): do not deploy the key \
            then. A later round publishes it.

            Examples:
              pinstore publish run --file publication.json
              pinstore publish once --file publication.json
              pinstore publish status --file publication.json
              pinstore publish announce --host api.example.com --key next-key.pem
              pinstore publish pending
              pinstore publish approve 3f2a9c0d1e --key approver.key.pem
            """,
        subcommands: [Run.self, Once.self, Status.self, Announce.self, Pending.self, Approve.self]
    )
}

/// The option every publish subcommand takes.
struct PublicationFileOptions: ParsableArguments {
    @Option(help: "The publication file (JSON).")
    var file: String = "publication.json"

    @Option(help: "Log level on standard error: trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @Option(help: ArgumentHelp("Probe HOST:PORT at ADDRESS:PORT2 instead of the addresses HOST resolves to (a staging load balancer, a test); repeatable.",
                               valueName: "HOST:PORT:ADDRESS:PORT2"))
    var connectTo: [String] = []

    func validate() throws {
        _ = try ConnectToResolver(connectTo)
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level \(logLevel) is not one of trace, debug, info, notice, warning, error, critical.")
        }
    }

    var logger: Logger {
        var logger = Logger(label: "pinstore.publisher", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        return logger
    }

    /// The publisher for the file, probing through the real TLS prober.
    func publisher() throws -> Publisher {
        let url = URL(fileURLWithPath: file)
        let prober = TLSPartnerProber(resolver: try ConnectToResolver(connectTo))
        do {
            let publication = try PublicationFile(contentsOf: url)
            return try Publisher(file: publication, prober: prober, logger: logger)
        } catch {
            // A state-file refusal names its own file and what to do; the publication file's
            // path in front of it would point at the wrong file.
            throw CLIError(error.code == .stateFile ? error.reason : "\(file): \(error.reason)")
        }
    }
}

extension PublishCommand {
    /// The long-lived service.
    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the publisher until SIGTERM or SIGINT (a graceful stop: the round in progress ends first).")

        @OptionGroup var options: PublicationFileOptions

        func run() async throws {
            let publisher = try options.publisher()
            let logger = options.logger
            let group = ServiceGroup(services: [publisher], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            logger.info("publisher started", metadata: ["pinstore.file": "\(options.file)"])
            try await group.run()
        }
    }

    /// One round, for cron.
    struct Once: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Probe every partner once, apply the rules, publish when due, print the status; exit codes as `status`.")

        @OptionGroup var options: PublicationFileOptions

        func run() async throws {
            let publisher = try options.publisher()
            await publisher.probe()
            let published = await publisher.cycle()
            let status = await publisher.status()
            Console.print(status.table)
            guard published else {
                Console.printError("error: the round could not publish, or its afterPublish command failed (the log above says which); the last good list stays served, and the next round tries again")
                throw ExitCode(1)
            }
            try PublishCommand.exit(for: status)
        }
    }

    /// The state as a table.
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the list in force and one row per partner: rotation case, pins, pending changes, next expiry.")

        @OptionGroup var options: PublicationFileOptions

        func run() async throws {
            let status = try await options.publisher().status()
            Console.print(status.table)
            try PublishCommand.exit(for: status)
        }
    }

    /// A pin for a key not deployed yet.
    struct Announce: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pin a partner's next key before it is deployed (an ACME deploy hook, a pre-generated next key).",
            discussion: """
                The key goes into the next list as a key pin (no sightings, CA or CT rule: this \
                is the operator's own act) and the list is published at once when this publisher \
                alone can. With several vantage points, announce on at least threshold of them: \
                each signs only pins its own plan carries, and an announcement is one publisher's. \
                The pin stays until the key has been seen presented and is no longer presented \
                (then for gracePeriod), or for announcementLifetime at most.

                Exit codes (a deploy hook can run `announce && deploy`):
                  0  the list in force carries the key's pin: deploy it
                  1  nothing was recorded (unknown partner, unreadable key: see the message)
                  5  recorded, but no published list carries it yet (the output folder is full or \
                read-only, signing failed, or other vantage points have not co-signed yet): do \
                not deploy yet; the next round (`run`, or `once`) publishes it
                """)

        @OptionGroup var options: PublicationFileOptions

        @Option(help: "The partner: its host, or its id in the publication file.")
        var host: String

        @Option(help: "The next key as PEM: a public key, a private key (only its public half is used) or a certificate.")
        var key: String?

        @Option(help: "The next key's pin: Base64 SHA-256 of its SubjectPublicKeyInfo.")
        var spki: String?

        func validate() throws {
            guard (key == nil) != (spki == nil) else {
                throw ValidationError("Give exactly one of --key and --spki.")
            }
        }

        func run() async throws {
            let publisher = try options.publisher()
            let digest: String
            if let key {
                let pem = String(decoding: try InputFiles.data(key, what: "key file"), as: UTF8.self)
                do {
                    digest = try Publisher.spkiSHA256(ofKeyPEM: pem)
                } catch {
                    throw CLIError("\(key): \(error.reason)")
                }
            } else {
                digest = spki ?? ""
            }
            let partner = try await PublishCommand.partnerID(host, in: publisher)
            do {
                try await publisher.announce(partnerID: partner, spkiSHA256: digest)
            } catch {
                throw CLIError("announcing: \(error.reason)")
            }
            let published = await publisher.cycle()
            guard await publisher.listCarries(partnerID: partner, spkiSHA256: digest) else {
                Console.print("announced \(digest) for \(partner): recorded, but no published list carries it yet")
                Console.printError(published
                    ? "error: the list carrying the key waits for other vantage points' signatures; do not deploy the key yet (exit \(PublishCommand.announcedNotPublished))"
                    : "error: the list carrying the key could not be published (the log above says why); do not deploy the key yet, the announcement stays recorded and the next round publishes it (exit \(PublishCommand.announcedNotPublished))")
                throw ExitCode(PublishCommand.announcedNotPublished)
            }
            guard await !publisher.afterPublishIsOwed else {
                Console.print("announced \(digest) for \(partner): the list in the output folder carries it")
                Console.printError("error: the after-publish command failed (the log above says why), so the list carrying the key may not have reached clients; do not deploy the key yet, the next round runs the command again (exit \(PublishCommand.announcedNotPublished))")
                throw ExitCode(PublishCommand.announcedNotPublished)
            }
            Console.print("announced \(digest) for \(partner): the published list carries it")
        }
    }

    /// What waits for a person.
    struct Pending: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List staged changes: certificates seen but not published, each with its reason and ID.")

        @OptionGroup var options: PublicationFileOptions

        func run() async throws {
            let changes = try await options.publisher().pending()
            guard !changes.isEmpty else {
                Console.print("nothing is staged")
                return
            }
            let header = ["ID", "PARTNER", "HOST", "PIN", "SUBJECT", "NOT AFTER", "NEEDS", "WHY"]
            let rows = changes.map { change in
                [change.id, change.partnerID, change.host, change.pin.map { "\(change.kind.rawValue) \($0)" } ?? "-", change.subject,
                 PublishCommand.format(change.notAfter), change.needsPerson ? "approval" : "sightings", change.outcome.description]
            }
            Console.print(PublishCommand.table([header] + rows))
            if changes.contains(where: \.needsPerson) { throw ExitCode(2) }
        }
    }

    /// A person's signature on a staged change.
    struct Approve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Approve a staged change with a key (an approver key or a list key) and publish it.")

        @OptionGroup var options: PublicationFileOptions

        @Argument(help: "The change's ID, as `pinstore publish pending` prints it.")
        var id: String

        @Option(help: "The approving private key (PEM).")
        var key: String

        func run() async throws {
            let publisher = try options.publisher()
            do {
                let signer = try KeyFileSigner(contentsOf: URL(fileURLWithPath: key))
                try await publisher.approve(changeID: id, signer: signer)
            } catch {
                throw CLIError("approving \(id): \(error.reason)")
            }
            Console.print("approved \(id)")
        }
    }
}

extension PublishCommand {
    /// `announce`'s exit code when the announcement is recorded but no published list carries it.
    static let announcedNotPublished: Int32 = 5

    /// Exits with the status's code (documented in the command's discussion); returns for 0.
    static func exit(for status: PublisherStatus, now: Date = Date()) throws {
        let code = exitCode(for: status, now: now)
        if code != 0 { throw ExitCode(code) }
    }

    /// The most serious condition's code: 4, then 3, then 2; 0 when none holds.
    static func exitCode(for status: PublisherStatus, now: Date) -> Int32 {
        if status.isListOverdue(at: now) { return 4 }
        if status.partners.contains(where: { $0.lastProbe == nil || $0.lastProbeFailure != nil }) { return 3 }
        if status.changesNeedingApproval > 0 { return 2 }
        return 0
    }

    /// The id of the partner `text` names (its id, or its host when one partner has it).
    static func partnerID(_ text: String, in publisher: Publisher) async throws -> String {
        let partners = await publisher.setup.file.partners
        if partners.contains(where: { $0.id == text }) { return text }
        let matching = partners.filter { $0.host.lowercased() == text.lowercased() }
        switch matching.count {
        case 1: return matching[0].id
        case 0: throw CLIError("no partner of the publication file has the id or host \(text)")
        default: throw CLIError("several partners have the host \(text) (\(matching.map(\.id).joined(separator: ", "))); give the id")
        }
    }

    static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// Columns aligned with two spaces.
    static func table(_ rows: [[String]]) -> String {
        let widths = (0..<(rows.first?.count ?? 0)).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n")
    }
}

/// `--connect-to HOST:PORT:ADDRESS:PORT2` (curl's option of the same name): the named partner is
/// probed at that address, everything else through the system's resolver. The host name checked
/// in the certificate stays HOST.
struct ConnectToResolver: ProbeAddressResolver {
    private let routes: [String: [ProbeAddress]]
    private let system = SystemAddressResolver()

    init(_ specifications: [String]) throws {
        var routes: [String: [ProbeAddress]] = [:]
        for text in specifications {
            // ADDRESS may be IPv6 in brackets: split HOST and PORT off the front, PORT2 off the end.
            let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, !parts[0].isEmpty, let port = Int(parts[1]), let last = parts[2].lastIndex(of: ":"),
                  let port2 = Int(parts[2][parts[2].index(after: last)...]), (1...65_535).contains(port2) else {
                throw ValidationError("--connect-to \(text) is not HOST:PORT:ADDRESS:PORT2")
            }
            var address = String(parts[2][..<last])
            if address.hasPrefix("["), address.hasSuffix("]") { address = String(address.dropFirst().dropLast()) }
            guard IPAddressLiteral.isLiteral(address) else {
                throw ValidationError("--connect-to \(text): \(address) is not an IP address")
            }
            routes["\(parts[0].lowercased()):\(port)", default: []].append(ProbeAddress(ip: address, port: port2))
        }
        self.routes = routes
    }

    func addresses(for host: String, port: Int) async throws(ProbeAddressResolutionError) -> [ProbeAddress] {
        if let route = routes["\(host.lowercased()):\(port)"] { return route }
        return try await system.addresses(for: host, port: port)
    }
}
