// The macOS type-check, run on Linux by `scripts/macos-typecheck.sh`.
//
// For every Swift target of the package (the snippets of Snippets/ included), in dependency
// order: take the exact compiler command SwiftPM wrote for it in its build description
// (`.build/debug.yaml`), make the macOS view of its sources (MacOSView.swift), and run that
// command on the view in place of the sources, with the stub modules (stubs/) and the
// macOS-view modules of the package's own targets found first. Dependencies outside the
// package (SwiftNIO, AsyncHTTPClient...) are their Linux builds: their public API is the same
// on both systems.
//
// Usage: macos-typecheck --package DIR --build-description FILE --stubs DIR --work DIR
import Foundation

// Unbuffered, so these lines and the compiler's stay in order in a CI log.
setvbuf(stdout, nil, _IONBF, 0)

var arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else {
        FileHandle.standardError.write(Data("usage: macos-typecheck --package DIR --build-description FILE --stubs DIR --work DIR\n".utf8))
        exit(2)
    }
    return arguments[index + 1]
}
let package = option("--package")
let description = option("--build-description")
let stubs = option("--stubs")
let work = option("--work")

/// One Swift module SwiftPM compiles: its name, its compiler command, what it reads.
struct ModuleCommand {
    var name: String
    var arguments: [String]
    var inputs: [String]
    var sources: [String] { inputs.filter { $0.hasSuffix(".swift") } }
}

/// The `C.<module>-...module` commands of the build description (llbuild's YAML; its
/// `inputs:` and `args:` lines are flow sequences of double-quoted strings, valid JSON).
func moduleCommands(in yaml: String) -> [ModuleCommand] {
    var commands: [ModuleCommand] = []
    var current: (name: String, inputs: [String])?
    for line in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
        if line.hasPrefix("  \"C."), line.hasSuffix(".module\":") {
            let key = line.dropFirst(5).dropLast(9)       // <module>-<triple>-debug
            let name = key.split(separator: "-").first.map(String.init) ?? String(key)
            current = (name, [])
        } else if let command = current, line.hasPrefix("    inputs: ") {
            current = (command.name, json(line.dropFirst(12)))
        } else if let command = current, line.hasPrefix("    args: ") {
            commands.append(ModuleCommand(name: command.name, arguments: json(line.dropFirst(10)), inputs: command.inputs))
            current = nil
        }
    }
    return commands
}

func json(_ text: Substring) -> [String] {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String] ?? []
}

/// SwiftPM's command, turned into a type-check of `sources` that writes only a module for
/// the targets after it (no objects, no dependencies, no index).
func typeCheckCommand(_ command: ModuleCommand, sources: [String]) -> [String] {
    let dropped: Set<String> = ["-emit-dependencies", "-emit-module", "-incremental", "-c", "-enable-batch-mode",
                                "-serialize-diagnostics", "-parseable-output", "-emit-objc-header"]
    let droppedWithValue: Set<String> = ["-emit-module-path", "-output-file-map", "-index-store-path", "-emit-objc-header-path"]
    var result: [String] = []
    var skipNext = false
    for argument in command.arguments.dropFirst() {
        if skipNext { skipNext = false; continue }
        if droppedWithValue.contains(argument) { skipNext = true; continue }
        if dropped.contains(argument) || argument.hasPrefix("@") { continue }
        result.append(argument)
    }
    return [command.arguments[0], "-I", "\(work)/Modules", "-I", "\(work)/stubs"] + result
        + ["-emit-module", "-emit-module-path", "\(work)/Modules/\(command.name).swiftmodule"] + sources
}

func run(_ arguments: [String]) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: arguments[0])
    process.arguments = Array(arguments.dropFirst())
    do {
        try process.run()
    } catch {
        print("error: cannot run \(arguments[0]): \(error)")
        return 1
    }
    process.waitUntilExit()
    return process.terminationStatus
}

guard let yaml = try? String(contentsOfFile: description, encoding: .utf8) else {
    print("error: no build description at \(description); run `swift build --build-tests` first")
    exit(1)
}
let all = moduleCommands(in: yaml)
let ours = all.filter { command in
    command.sources.contains {
        $0.hasPrefix(package + "/Sources/") || $0.hasPrefix(package + "/Tests/") || $0.hasPrefix(package + "/Snippets/")
    }
}
guard !ours.isEmpty else {
    print("error: the build description names no Swift target of \(package)")
    exit(1)
}
// Every module a `canImport` may name: the package's and its dependencies' (the SDK's are
// listed in MacOSView.swift). C modules compiled by SwiftPM appear as C.<name> commands too.
var knownModules = Set(all.map(\.name))
for line in yaml.split(separator: "\n") where line.hasPrefix("  \"C.") {
    if let name = line.dropFirst(5).split(separator: "-").first { knownModules.insert(String(name)) }
}
knownModules.formUnion(["COpenSSL", "CPinStoreShims", "CPinStoreTestSupport"])

// The check must be able to fail: a canary must come out as a Mac's view, with its Glibc-only
// name reported, or nothing below can be trusted (a configuration answering false everywhere
// would blank whole files and pass).
let canaryRoot = "\(work)/canary"
let canarySource = """
    #if os(macOS) && canImport(Darwin) && canImport(Security) && !canImport(Glibc) && !canImport(FoundationNetworking)
    let resolvedAsMacOS = 1
    #else
    let resolvedAsSomethingElse = 1
    #endif
    func modified(_ info: stat) -> Int { info.st_mtim.tv_sec }

    """
try FileManager.default.createDirectory(atPath: canaryRoot, withIntermediateDirectories: true)
try canarySource.write(toFile: "\(canaryRoot)/Canary.swift", atomically: true, encoding: .utf8)
let canaryProblems = makeMacOSViews(of: ["\(canaryRoot)/Canary.swift"], root: canaryRoot, out: "\(canaryRoot)/view",
                                    packageModules: [])
let canaryView = (try? String(contentsOfFile: "\(canaryRoot)/view/Canary.swift", encoding: .utf8)) ?? ""
guard canaryView.contains("let resolvedAsMacOS"), !canaryView.contains("resolvedAsSomethingElse"),
      canaryProblems.count == 1, canaryProblems[0].contains("'st_mtim'") else {
    print("error: the macOS view's self-check failed: the canary was not resolved as a Mac resolves it")
    print(canaryView)
    canaryProblems.forEach { print($0) }
    exit(1)
}

try? FileManager.default.removeItem(atPath: "\(work)/view")
try FileManager.default.createDirectory(atPath: "\(work)/Modules", withIntermediateDirectories: true)

var problems = 0
var done: Set<String> = []
var failed: Set<String> = []
var pending = ours
let names = Set(ours.map(\.name))
while !pending.isEmpty {
    // A target is ready when the package targets it imports have their macOS-view modules.
    guard let next = pending.firstIndex(where: { command in
        command.inputs.allSatisfy { input in
            guard input.hasSuffix(".swiftmodule") else { return true }
            let module = ((input as NSString).lastPathComponent as NSString).deletingPathExtension
            return !names.contains(module) || done.contains(module)
        }
    }) else {
        print("error: the package's targets depend on each other in a cycle: \(pending.map(\.name))")
        exit(1)
    }
    let command = pending.remove(at: next)
    done.insert(command.name)
    let imported = command.inputs.filter { $0.hasSuffix(".swiftmodule") }
        .map { ((($0 as NSString).lastPathComponent) as NSString).deletingPathExtension }
    if let broken = imported.first(where: failed.contains) {
        // Its errors would be those of the Linux module standing in for the broken one.
        print("macOS view: \(command.name): not checked (it imports \(broken), which failed)")
        failed.insert(command.name)
        continue
    }
    let viewRoot = "\(work)/view"
    let viewProblems = makeMacOSViews(of: command.sources, root: package, out: viewRoot, packageModules: knownModules)
    viewProblems.forEach { print($0) }
    problems += viewProblems.count
    let viewSources = command.sources.map { viewRoot + "/" + relativePath($0, to: package) }
    let started = Date()
    let status = run(typeCheckCommand(command, sources: viewSources))
    let seconds = String(format: "%.1f", Date().timeIntervalSince(started))
    print("macOS view: \(command.name) (\(viewSources.count) files): \(status == 0 ? "ok" : "FAILED") in \(seconds) s")
    if status != 0 || !viewProblems.isEmpty {
        problems += 1
        failed.insert(command.name)
    }
}
if problems > 0 {
    print("macOS type-check: FAILED (\(problems) problem(s) above; paths under \(work)/view map line for line to the package's files)")
    exit(1)
}
print("macOS type-check: \(done.count) targets, no errors")
