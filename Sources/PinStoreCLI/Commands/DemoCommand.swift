import ArgumentParser
import Foundation

/// `pinstore demo`: the whole flow on loopback (not yet available).
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run dynamic pinning end to end on loopback (not yet available).",
        discussion: """
            Example:
              swift run pinstore demo
            """
    )

    func run() async throws {
        throw CLIError("demo: not yet available")
    }
}
