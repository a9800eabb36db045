import Foundation
import PinStore
@testable import PinStorePublisher
import PinStoreTestSupport
import PinStoreTesting
import Testing

/// `afterPublish`: the operator's deploy hook, run by the real CommandRunner (posix_spawn of
/// /bin/sh) after each publication, with the output folder as its last argument.
@Suite struct AfterPublishCommandTests {
    /// A publication file whose `afterPublish` is a shell script; `$1` is the output folder.
    static func file(_ fixture: PublisherFixture, script: String, timeout: String = "5m") throws -> PublicationFile {
        let argv = try JSONEncoder().encode(["/bin/sh", "-c", script, "after-publish"])
        return try fixture.file(#", "afterPublish": \#(String(decoding: argv, as: UTF8.self)), "afterPublishTimeout": "\#(timeout)""#)
    }

    @Test func theCommandGetsTheOutputFolderAndRunsAfterTheListIsInIt() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let copy = fixture.folder.appendingPathComponent("copied-list.json")
        let clock = TestClock()
        let file = try Self.file(fixture, script: #"cp "$1/list.json" "\#(copy.path)""#)
        let (publisher, _) = try PublisherTests.publisher(fixture, clock: clock, file: file)
        await PublisherTests.probeThreeTimes(publisher, clock: clock)
        #expect(await publisher.cycle())
        #expect(try Data(contentsOf: copy) == Data(contentsOf: fixture.listURL))
        #expect(await !publisher.afterPublishIsOwed)
    }

    @Test func aFailingCommandFailsTheRoundAndRunsAgainNextRoundUntilItSucceeds() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let runs = fixture.folder.appendingPathComponent("runs")
        // Fails on its first run, succeeds on the second.
        let script = #"echo run >> "\#(runs.path)"; [ "$(wc -l < "\#(runs.path)")" -ge 2 ] || { echo "bucket unreachable" >&2; exit 3; }"#
        let clock = TestClock()
        let (publisher, _) = try PublisherTests.publisher(fixture, clock: clock, file: try Self.file(fixture, script: script))
        await PublisherTests.probeThreeTimes(publisher, clock: clock)
        #expect(await !publisher.cycle())
        #expect(FileManager.default.fileExists(atPath: fixture.listURL.path), "the list stays published")
        #expect(await publisher.afterPublishIsOwed)
        clock.advance(60)
        #expect(await publisher.cycle(), "nothing new to publish, but the owed run happens and succeeds")
        #expect(await !publisher.afterPublishIsOwed)
        #expect(try String(contentsOf: runs, encoding: .utf8) == "run\nrun\n")
        #expect(await publisher.cycle())
        #expect(try String(contentsOf: runs, encoding: .utf8) == "run\nrun\n", "not run again once it succeeded")
    }

    @Test func anOwedRunSurvivesARestart() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let file = try Self.file(fixture, script: "exit 1")
        let (publisher, _) = try PublisherTests.publisher(fixture, clock: clock, file: file)
        await PublisherTests.probeThreeTimes(publisher, clock: clock)
        #expect(await !publisher.cycle())
        let (restarted, _) = try PublisherTests.publisher(fixture, clock: clock, file: file)
        #expect(await restarted.afterPublishIsOwed)
    }

    @Test func aCommandPastItsTimeoutIsKilledWithWhatItStarted() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let pidFile = fixture.folder.appendingPathComponent("sleeper.pid")
        let clock = TestClock()
        // A child of the shell, sleeping long past the timeout: the whole group is killed. (10 s,
        // not 1: on a busy machine the shell may take seconds to start and write its child's pid.)
        let script = #"sleep 600 & echo $! > "\#(pidFile.path)"; wait"#
        let (publisher, _) = try PublisherTests.publisher(fixture, clock: clock, file: try Self.file(fixture, script: script, timeout: "10s"))
        await PublisherTests.probeThreeTimes(publisher, clock: clock)
        #expect(await !publisher.cycle())
        #expect(await publisher.afterPublishIsOwed)
        // On a machine busy enough that the shell had not started its child within the timeout,
        // there is no child to look for: the round's failure above is then all there is to see.
        guard let written = try? String(contentsOf: pidFile, encoding: .utf8),
              let pid = Int32(written.trimmingCharacters(in: .whitespacesAndNewlines)) else { return }
        // SIGKILL was sent to its group before cycle() returned; wait for the event (it is gone,
        // or a zombie), bounded only as a hang guard. A sleep the kill missed would stay "S".
        var state = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        for _ in 0..<3_000 where state.map({ !$0.contains(") Z ") }) ?? false {
            try await Task.sleep(for: .milliseconds(100))
            state = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        }
        #expect(state == nil || state!.contains(") Z "), "\(state ?? "")")
    }

    /// A publisher stopping (its task cancelled) does not wait out `afterPublishTimeout`.
    @Test(.timeLimit(.minutes(10)))
    func aCancelledRunKillsTheCommandAtOnceNotAtItsTimeout() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("runner-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pidFile = folder.appendingPathComponent("pid")
        let run = Task {
            try await CommandRunner.run(["/bin/sh", "-c", #"echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 600"#, "sh", pidFile.path],
                                        input: nil, timeout: HangGuard.seconds * 10, maximumOutput: 4_096)
        }
        #expect(try await pollUntil { FileManager.default.fileExists(atPath: pidFile.path) })
        run.cancel()
        let result = await run.result
        #expect(throws: CommandRunner.Failure.cancelled) { try result.get() }
    }

    @Test func anEmptyCommandIsRefusedWhenTheFileIsRead() throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let error = #expect(throws: PublisherError.self) { _ = try fixture.file(#", "afterPublish": []"#) }
        #expect(error?.code == .invalidPublicationFile)
        #expect(error?.reason.contains("afterPublish") == true)
    }
}
