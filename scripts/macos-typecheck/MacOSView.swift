// The macOS view of Swift sources, made on Linux: every `#if` is resolved as a Mac building the
// package would resolve it (with the compiler's own evaluator, SwiftIfConfig from the
// toolchain), and the inactive text is blanked out so that line and column numbers stay those of
// the original file. Two more things a Mac's SDK does that Linux's cannot:
// - `import Foundation` also brings what Apple's Foundation holds and Linux splits off
//   (FoundationNetworking, FoundationXML, the Security-typed URLSession members): the view
//   appends `; import _MacOSFoundation` (a stub module) on the same line;
// - a Glibc-only name in the view (the module itself, `st_mtim`, inotify...) is an error even
//   where Linux's Foundation would make it compile.
//
import Foundation
import SwiftDiagnostics
import SwiftIfConfig
import SwiftParser
import SwiftSyntax

/// How an arm64 Mac with the macOS 13+ SDK and this compiler answers `#if` conditions.
struct MacOSBuildConfiguration: BuildConfiguration {
    /// Modules the package's own build provides (its targets and dependencies).
    var packageModules: Set<String>

    /// What the macOS SDK and toolchain offer, as far as this package asks.
    static let sdkModules: Set<String> = [
        "Darwin", "Foundation", "Security", "Dispatch", "Network", "os", "CoreFoundation", "ObjectiveC",
        "XCTest", "Testing", "Synchronization", "_Concurrency", "Swift", "SystemConfiguration",
    ]
    /// Linux-only modules: a Mac cannot import them.
    static let notOnMacOS: Set<String> = [
        "Glibc", "Musl", "Bionic", "Android", "WASILibc", "WinSDK", "ucrt", "CRT",
        "FoundationNetworking", "FoundationXML", "FoundationEssentials", "_FoundationCShims",
    ]

    struct UnknownModule: Error, CustomStringConvertible {
        let name: String
        var description: String {
            "canImport(\(name)): not known to the macOS view; add it to the SDK or Linux-only list in MacOSView.swift"
        }
    }

    func canImport(importPath: [(TokenSyntax, String)], version: CanImportVersion) throws -> Bool {
        let name = importPath.map(\.1).joined(separator: ".")
        let top = importPath.first?.1 ?? name
        if Self.notOnMacOS.contains(top) { return false }
        if Self.sdkModules.contains(top) || packageModules.contains(top) { return true }
        throw UnknownModule(name: name)
    }
    func isCustomConditionSet(name: String) throws -> Bool { ["SWIFT_PACKAGE", "DEBUG"].contains(name) }
    func hasFeature(name: String) throws -> Bool { false }
    func hasAttribute(name: String) throws -> Bool { true }
    func isActiveTargetOS(name: String) throws -> Bool { name == "macOS" }
    func isActiveTargetArchitecture(name: String) throws -> Bool { name == "arm64" }
    func isActiveTargetEnvironment(name: String) throws -> Bool { false }
    func isActiveTargetRuntime(name: String) throws -> Bool { name == "_ObjC" || name == "_multithreaded" }
    func isActiveTargetPointerAuthentication(name: String) throws -> Bool { false }
    func isActiveTargetObjectFormat(name: String) throws -> Bool { name == "MachO" }
    var targetPointerBitWidth: Int { 64 }
    var targetAtomicBitWidths: [Int] { [32, 64, 128] }
    var endianness: Endianness { .little }
    var languageVersion: VersionTuple { VersionTuple(6, 0) }
    var compilerVersion: VersionTuple { VersionTuple(6, 3, 1) }
}

/// Names that exist on Linux's C library (or its Foundation split) and not on a Mac.
let glibcOnlyNames: Set<String> = [
    "Glibc", "SwiftGlibc", "Musl", "FoundationNetworking", "FoundationXML", "CNIOLinux",
    "st_mtim", "st_atim", "st_ctim", "__errno_location", "__socket_type", "__time_t", "__off_t", "__mode_t",
    "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "inotify_event",
    "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait", "eventfd", "timerfd_create", "timerfd_settime",
    "pipe2", "accept4", "memfd_create", "getrandom", "prctl", "sched_getaffinity", "MSG_NOSIGNAL",
    "SOCK_CLOEXEC", "SOCK_NONBLOCK", "O_PATH", "O_TMPFILE", "O_DIRECT", "IN_CREATE", "IN_MOVED_TO",
]

final class MacOSViewMaker: SyntaxVisitor {
    let configuration: MacOSBuildConfiguration
    let converter: SourceLocationConverter
    let path: String
    var blanks: [Range<Int>] = []
    var insertions: [(offset: Int, text: String)] = []
    var problems: [String] = []
    private var inactiveClauses: Set<SyntaxIdentifier> = []

    init(configuration: MacOSBuildConfiguration, tree: SourceFileSyntax, path: String) {
        self.configuration = configuration
        self.converter = SourceLocationConverter(fileName: path, tree: tree)
        self.path = path
        super.init(viewMode: .sourceAccurate)
    }

    func report(_ message: String, at position: AbsolutePosition) {
        let location = converter.location(for: position)
        problems.append("\(path):\(location.line):\(location.column): error: \(message)")
    }

    override func visit(_ node: IfConfigDeclSyntax) -> SyntaxVisitorContinueKind {
        let (active, diagnostics) = node.activeClause(in: configuration)
        for diagnostic in diagnostics {
            report("macOS view: \(diagnostic.message)", at: diagnostic.node.positionAfterSkippingLeadingTrivia)
        }
        for clause in node.clauses {
            let start = clause.poundKeyword.positionAfterSkippingLeadingTrivia.utf8Offset
            if clause.id == active?.id {
                // Keep the elements, blank the `#if condition` line.
                let end = clause.elements?.position.utf8Offset ?? clause.endPosition.utf8Offset
                blanks.append(start..<end)
            } else {
                inactiveClauses.insert(clause.id)
                blanks.append(start..<clause.endPosition.utf8Offset)
            }
        }
        let endif = node.poundEndif
        blanks.append(endif.positionAfterSkippingLeadingTrivia.utf8Offset..<endif.endPositionBeforeTrailingTrivia.utf8Offset)
        return .visitChildren
    }

    override func visit(_ node: IfConfigClauseSyntax) -> SyntaxVisitorContinueKind {
        // Only the active clause's code is the view; its condition may name Linux's modules.
        if !inactiveClauses.contains(node.id), let elements = node.elements {
            walk(elements)
        }
        return .skipChildren
    }

    override func visit(_ node: ImportDeclSyntax) -> SyntaxVisitorContinueKind {
        if node.path.map(\.name.text) == ["Foundation"] {
            // Apple's Foundation holds URLSession, XMLParser and the Security-typed members.
            let modifiers = node.modifiers.map { $0.name.text + " " }.joined()
            insertions.append((node.endPositionBeforeTrailingTrivia.utf8Offset, "; \(modifiers)import _MacOSFoundation"))
        }
        return .visitChildren
    }

    override func visit(_ token: TokenSyntax) -> SyntaxVisitorContinueKind {
        if case .identifier(let name) = token.tokenKind, glibcOnlyNames.contains(name) {
            report("'\(name)' does not exist on macOS (Glibc or Linux Foundation only)", at: token.positionAfterSkippingLeadingTrivia)
        }
        return .visitChildren
    }
}

func makeView(of source: [UInt8], blanks: [Range<Int>], insertions: [(offset: Int, text: String)]) -> [UInt8] {
    var bytes = source
    for range in blanks {
        for index in range where bytes[index] != UInt8(ascii: "\n") && bytes[index] != UInt8(ascii: "\r") {
            bytes[index] = UInt8(ascii: " ")
        }
    }
    for insertion in insertions.sorted(by: { $0.offset > $1.offset }) {
        bytes.insert(contentsOf: Array(insertion.text.utf8), at: insertion.offset)
    }
    return bytes
}

/// Writes the macOS view of each of `files` under `out` (at its path relative to `root`) and
/// returns the problems found, as compiler-style error lines.
func makeMacOSViews(of files: [String], root: String, out: String, packageModules: Set<String>) -> [String] {
    let configuration = MacOSBuildConfiguration(packageModules: packageModules)
    var problems: [String] = []
    for file in files {
        guard let data = FileManager.default.contents(atPath: file) else {
            problems.append("\(file): error: cannot read")
            continue
        }
        let source = [UInt8](data)
        let tree = source.withUnsafeBufferPointer { Parser.parse(source: $0) }
        let maker = MacOSViewMaker(configuration: configuration, tree: tree, path: file)
        maker.walk(tree)
        problems += maker.problems
        let destination = out + "/" + relativePath(file, to: root)
        let view = makeView(of: source, blanks: maker.blanks, insertions: maker.insertions)
        do {
            try FileManager.default.createDirectory(atPath: (destination as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try Data(view).write(to: URL(fileURLWithPath: destination))
        } catch {
            problems.append("\(destination): error: cannot write: \(error)")
        }
    }
    return problems
}

func relativePath(_ file: String, to root: String) -> String {
    file.hasPrefix(root + "/") ? String(file.dropFirst(root.count + 1)) : (file as NSString).lastPathComponent
}
