import ArgumentParser
import Foundation
import PinStore

/// `pinstore revocation`: what the CRL check sees for a host.
struct RevocationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revocation",
        abstract: "Check a host's chain against its CAs' CRLs, as a store under a CRL mode would.",
        subcommands: [Status.self]
    )

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the validated chain, each CRL (its age, size and dates) and the verdict; exits 1 when revoked.",
            discussion: """
              pinstore revocation status --host api.example.com
              pinstore revocation status --host api.example.com --connect-to 10.0.0.5:8443 --ca-file private-ca.pem
            """)

        @Option(help: "The host name the chain must be valid for (and the TLS server, unless --connect-to).")
        var host: String

        @Option(name: .customLong("connect-to"), help: "The TLS server (host[:port]) to read the chain from, with --host as SNI.")
        var connectTo: String?

        @Option(name: .customLong("ca-file"), help: "Trust these anchors (PEM) instead of the system store.")
        var caFile: String?

        @Option(help: "Seconds each CRL download may take (default 10).")
        var timeout: Double = 10

        func run() async throws {
            let endpoint = try TLSEndpoint(parsing: connectTo ?? host)
            let chain = try await PresentedChainReader.read(endpoint, serverName: try TLSEndpoint(parsing: host).host)
            let roots: TrustRoots
            if let caFile {
                do {
                    roots = try TrustRoots.anchors(contentsOf: URL(fileURLWithPath: caFile))
                } catch {
                    throw CLIError("reading \(caFile)", error)
                }
            } else {
                roots = .system
            }
            let report = await CRLStatusReport.report(host: try TLSEndpoint(parsing: host).host, presentedChain: chain.map(\.derRepresentation),
                                                      trustRoots: roots, timeout: timeout)
            for line in report.lines { Console.print(line) }
            if report.revoked { throw ExitCode.failure }
        }
    }
}
