import Foundation
import Testing

/// `atsgate check` as scripts use it: exit codes, one JSON object per URL, errors naming the file.
@Suite struct CheckCommandTests {
    static let appPolicy = """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict>
          <key>CFBundleIdentifier</key><string>com.example.app</string>
          <key>NSAppTransportSecurity</key><dict>
            <key>NSExceptionDomains</key><dict>
              <key>legacy.example.com</key><dict>
                <key>NSIncludesSubdomains</key><true/>
                <key>NSExceptionAllowsInsecureHTTPLoads</key><true/>
              </dict>
              <key>10.20.0.0/16</key><dict>
                <key>NSExceptionAllowsInsecureHTTPLoads</key><true/>
              </dict>
            </dict>
          </dict>
        </dict></plist>
        """

    @Test func blockedURLGivesExitOneAndTheInterfaceFields() throws {
        let run = try Atsgate.run(["check", "http://api.example.com/v1"])
        #expect(run.status == 1)
        let objects = try run.jsonLines()
        try #require(objects.count == 1)
        let object = objects[0]
        #expect(object["url"] as? String == "http://api.example.com/v1")
        #expect(object["scheme"] as? String == "http")
        #expect(object["host"] as? String == "api.example.com")
        #expect(object["port"] as? Int == 80)
        #expect(object["class"] as? String == "public")
        #expect(object["direct"] as? Bool == false)
        #expect(object["exception"] is NSNull)
        #expect(object["ats"] as? String == "on")
        #expect(object["action"] as? String == "block")
        #expect(object["reason"] as? String == "cleartext-http")
        #expect(object["message"] as? String ==
            "cleartext HTTP to api.example.com is not allowed: no NSExceptionDomains entry allows it "
            + "(add NSExceptionAllowsInsecureHTTPLoads=YES for api.example.com)")
        let requirements = try #require(object["requirements"] as? [String: Any])
        #expect(requirements["cleartextAllowed"] as? Bool == false)
        #expect(requirements["minimumTLSVersion"] as? String == "TLSv1.2")
        #expect(requirements["forwardSecrecy"] as? Bool == true)
        #expect(requirements["certificateChecks"] as? Bool == true)
        #expect(object["rule"] as? String == "R12")
        // Field order is part of the interface: scripts that grep the line see url first.
        #expect(run.stdout.hasPrefix(#"{"url":"http://api.example.com/v1","scheme":"http","host":"#))
    }

    @Test func allowedURLsExitZeroWithOneObjectEach() throws {
        let run = try Atsgate.run(["check", "https://api.example.com/", "http://printer/", "http://127.0.0.1:8080/"])
        #expect(run.status == 0)
        let objects = try run.jsonLines()
        #expect(objects.map { $0["action"] as? String } == ["allow", "allow", "allow"])
        #expect(objects.map { $0["ats"] as? String } == ["on", "exempt", "exempt"])
        #expect(objects[0]["reason"] is NSNull)
        #expect(objects[1]["class"] as? String == "unqualified")
        let requirements = try #require(objects[1]["requirements"] as? [String: Any])
        #expect(requirements["minimumTLSVersion"] is NSNull)
    }

    @Test func anyBlockedURLMakesTheExitOne() throws {
        let run = try Atsgate.run(["check", "https://api.example.com/", "http://api.example.com/"])
        #expect(run.status == 1)
        #expect(try run.jsonLines().count == 2)
    }

    @Test func numericHostsAreIPAddressesNotUnqualifiedNames() throws {
        let run = try Atsgate.run(["check", "http://134744072/", "http://0x7f.1/", "http://[::ffff:10.1.2.3]/"])
        let objects = try run.jsonLines()
        #expect(objects.map { $0["host"] as? String } == ["8.8.8.8", "127.0.0.1", "10.1.2.3"])
        #expect(objects.map { $0["class"] as? String } == ["ip", "ip", "ip"])
        #expect(objects[0]["action"] as? String == "block")
        #expect(objects[0]["direct"] as? Bool == false)
        #expect(run.status == 1)
    }

    @Test(arguments: [
        ("legacy.example.com.xml", "http://cdn.legacy.example.com/a", "allow", "legacy.example.com"),
        ("legacy.example.com.xml", "http://10.20.3.4/", "allow", "10.20.0.0/16"),
        ("legacy.example.com.xml", "http://10.21.3.4/", "allow", nil),
    ] as [(String, String, String, String?)])
    func policyExceptionsDecide(file: String, url: String, action: String, exception: String?) throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write(file, Self.appPolicy)
        let run = try Atsgate.run(["check", "--policy", path, url])
        let object = try #require(try run.jsonLines().first)
        #expect(object["action"] as? String == action)
        #expect(object["exception"] as? String == exception)
        #expect(run.status == 0)
    }

    @Test func builtinExceptionIsNamedAndCanBeTurnedOff() throws {
        let withBuiltins = try #require(try Atsgate.run(["check", "http://www.apple.com/"]).jsonLines().first)
        #expect(withBuiltins["exception"] as? String == "builtin:apple.com")
        #expect(withBuiltins["action"] as? String == "allow")
        let without = try Atsgate.run(["check", "--no-builtin-exceptions", "http://www.apple.com/"])
        #expect(without.status == 1)
        #expect(try without.jsonLines().first?["exception"] is NSNull)
    }

    @Test func profileContextCleartextAndLocalNetworkFlags() throws {
        let directory = try TemporaryDirectory()
        let media = try directory.write("media.json", #"{"NSAllowsArbitraryLoadsForMedia": true}"#)
        let asMedia = try Atsgate.run(["check", "--policy", media, "--context", "media", "http://video.example.com/"])
        #expect(asMedia.status == 0)
        #expect(try asMedia.jsonLines().first?["ats"] as? String == "off")
        let asApp = try Atsgate.run(["check", "--policy", media, "http://video.example.com/"])
        #expect(asApp.status == 1)

        let ios9 = try Atsgate.run(["check", "--profile", "ios9", "http://printer/"])
        #expect(ios9.status == 1)
        #expect(try ios9.jsonLines().first?["profile"] as? String == "ios9")

        let upgrade = try Atsgate.run(["check", "--cleartext", "upgrade", "http://api.example.com/"])
        #expect(upgrade.status == 0)
        let upgraded = try #require(try upgrade.jsonLines().first)
        #expect(upgraded["action"] as? String == "upgrade")
        #expect(upgraded["reason"] is NSNull)

        let custom = try Atsgate.run(["check", "--local-network", "100.64.0.0/10", "http://100.64.1.1/", "http://10.0.0.1/"])
        let objects = try custom.jsonLines()
        #expect(objects.map { $0["direct"] as? Bool } == [true, false])
        #expect(custom.status == 1)
    }

    @Test func urlsFromStandardInput() throws {
        let run = try Atsgate.run(["check", "-"], stdin: "# comment\nhttps://a.example.com/\n\nhttp://printer/\n")
        #expect(run.status == 0)
        #expect(try run.jsonLines().map { $0["url"] as? String } == ["https://a.example.com/", "http://printer/"])
    }

    @Test func textFormatIsOneLinePerURL() throws {
        let run = try Atsgate.run(["check", "--format", "text", "http://api.example.com/", "https://api.example.com/"])
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix("BLOCK cleartext-http http://api.example.com/: cleartext HTTP to api.example.com"))
        #expect(lines[1].hasPrefix("ALLOW https://api.example.com/: HTTPS to api.example.com"))
    }

    // MARK: errors: exit 2, one line naming the problem, nothing on stdout

    @Test(arguments: [
        (["check", "http://a..b/"], "invalid URL http://a..b/: invalid host 'a..b': empty label"),
        (["check", "ftp://example.com/"], "unsupported scheme 'ftp'"),
        (["check", "http://1.2.3.256/"], "not a valid IPv4 address"),
        (["check", "example.com"], "not an absolute URL"),
        (["check", "--profile", "ios8", "http://x.example/"], "'ios8' is invalid for '--profile"),
        (["check", "--bogus", "http://x.example/"], "Unknown option '--bogus'"),
        // Flags of other proxies get the one that does what was meant, not the nearest spelling.
        (["run", "--port", "3128"], "Unknown option '--port'. Did you mean '--listen HOST:PORT'?"),
        (["run", "--bind=127.0.0.1"], "Unknown option '--bind'. Did you mean '--listen HOST:PORT'?"),
        (["run", "--upstream", "http://squid:3128"], "Did you mean '--parent http://HOST:PORT'?"),
        (["check"], "Missing expected argument"),
    ])
    func usageErrorsExitTwo(arguments: [String], expected: String) throws {
        let run = try Atsgate.run(arguments)
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains(expected), "stderr was: \(run.stderr)")
    }

    @Test func badPolicyFilesExitTwoNamingTheFileAndProblem() throws {
        let directory = try TemporaryDirectory()
        let cases: [(String, Data, String)] = [
            ("garbage.plist", Data("hello".utf8), "not a property list (XML or binary) or JSON"),
            ("empty.plist", Data(), "empty file"),
            ("broken.plist", Data("<plist><dict><key>a</key></plist>".utf8), "not a valid XML property list"),
            ("array.json", Data("[1, 2]".utf8), "root is an array, expected a dictionary"),
            ("wrong.plist", Data("""
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>NSAppTransportSecurity</key><string>YES</string></dict></plist>
                """.utf8), "NSAppTransportSecurity is a string, expected a dictionary"),
            ("truncated.json", Data(#"{"NSAllowsArbitraryLoads": tr"#.utf8), "not a valid JSON document"),
        ]
        for (name, contents, problem) in cases {
            let path = try directory.write(name, contents)
            let run = try Atsgate.run(["check", "--policy", path, "https://example.com/"])
            #expect(run.status == 2, "\(name)")
            #expect(run.stdout.isEmpty, "\(name)")
            #expect(run.stderr.hasPrefix("atsgate: \(path):"), "\(name): \(run.stderr)")  // `FILE:LINE:COLUMN:` where it breaks
            #expect(run.stderr.contains(problem), "\(name): \(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(name): one line expected")
        }
        let missing = try Atsgate.run(["check", "--policy", directory.url.appendingPathComponent("nope.plist").path,
                                       "https://example.com/"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("nope.plist: no such file"))
        let isDirectory = try Atsgate.run(["check", "--policy", directory.url.path, "https://example.com/"])
        #expect(isDirectory.status == 2)
        #expect(isDirectory.stderr.contains("is a directory"))
    }

    @Test func binaryInfoPlistIsRead() throws {
        let directory = try TemporaryDirectory()
        let plist: [String: Any] = [
            "CFBundleIdentifier": "com.example.bin",
            "NSAppTransportSecurity": ["NSAllowsArbitraryLoads": true],
        ]
        let data = try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
        let path = try directory.write("Info.plist", data)
        let run = try Atsgate.run(["check", "--policy", path, "http://anything.example.com/"])
        #expect(run.status == 0)
        #expect(try run.jsonLines().first?["ats"] as? String == "off")
    }

    @Test func versionNamesTheLinkedLibraries() throws {
        let run = try Atsgate.run(["version"])
        #expect(run.status == 0)
        #expect(run.stdout.contains("tls: OpenSSL 3."))
        #expect(run.stdout.contains("libsystemd linked"))
    }
}
