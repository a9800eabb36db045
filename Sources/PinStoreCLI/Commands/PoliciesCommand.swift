import ArgumentParser
import Foundation
import PinStore

/// `pinstore policies`: shows what an Info.plist or an Android network security config pins.
struct PoliciesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policies",
        abstract: "Show the pin policies an Info.plist (NSPinnedDomains) or a network_security_config.xml declares.",
        discussion: """
            Imports the file as PinStore does (PinPolicyImport) and prints, for each domain, what \
            it covers, its pins (sha256/<SPKI> with their kind) and its expiration, then whether \
            a store would accept the policy (at least two distinct pins, no pattern on a public \
            suffix). Exits with status 1 if the file cannot be imported or a policy would be \
            refused. The format is taken from the content: a property list or Android XML.

            Examples:
              pinstore policies App/Info.plist
              pinstore policies app/src/main/res/xml/network_security_config.xml
            """
    )

    @Argument(help: "An Info.plist (XML or binary) or an Android network_security_config.xml.")
    var file: String

    func run() throws {
        let data = try InputFiles.data(file, what: "policy file")
        let isAndroid = String(decoding: data.prefix(4096), as: UTF8.self).contains("<network-security-config")
        let policies: [PinPolicy]
        do {
            policies = isAndroid ? try PinPolicyImport.networkSecurityConfig(data) : try PinPolicyImport.infoPlist(data)
        } catch {
            throw CLIError("\(file): \(error)")
        }
        Console.print("\(file): \(isAndroid ? "Android network security config" : "Info.plist NSPinnedDomains"), \(policies.count) polic\(policies.count == 1 ? "y" : "ies")"
            + (isAndroid ? "" : " (a domain with NSIncludesSubdomains is two: the domain, and *. one label below it)"))
        var refused = 0
        for policy in policies {
            Console.print()
            Console.print(Self.coverage(of: policy))
            if let expiration = policy.expiration {
                Console.print("  expires \(ISO8601DateFormatter().string(from: expiration)) (then no longer enforced)")
            }
            Console.print(policy.requiresMatchInEachCategory
                ? "  allowed when a leaf pin AND a CA pin match:" : "  allowed when one of these matches:")
            for pin in policy.pins { Console.print("    \(pin)") }
            do {
                try policy.check()
                Console.print("  ok")
            } catch {
                refused += 1
                Console.print("  REFUSED by PinStore: \(error.reason)")
            }
        }
        if refused > 0 { throw ExitCode(1) }
    }
}

extension PoliciesCommand {
    /// Which hosts a policy covers, in words.
    static func coverage(of policy: PinPolicy) -> String {
        let domain = policy.domain
        if domain.hasPrefix("**.") { return "\(domain) (\(domain.dropFirst(3)) and every name below it)" }
        if domain.hasPrefix("*.") { return "\(domain) (exactly one label below \(domain.dropFirst(2)))" }
        return policy.includesSubdomains ? "\(domain) and every name below it" : domain
    }
}
