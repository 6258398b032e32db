//===- TuneDb.cpp - Measured plans, kept between compiles ------------------===//
#include "compiler/schedule/TuneDb.h"

#include "compiler/support/Error.h"
#include "compiler/support/Files.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace mlcc::schedule {

namespace {

/// One line's flat JSON object: string and number members.
class LineParser {
public:
  LineParser(const std::string &line, const std::string &where) : S(line), Where(where) {}

  std::map<std::string, std::string> object(std::map<std::string, double> &numbers) {
    std::map<std::string, std::string> strings;
    expect('{');
    skip();
    if (peek() == '}') {
      ++I;
    } else {
      for (;;) {
        skip();
        std::string key = string();
        if (strings.count(key) || numbers.count(key))
          bad("member \"" + key + "\" appears twice");
        expect(':');
        skip();
        if (peek() == '"')
          strings[key] = string();
        else
          numbers[key] = number();
        skip();
        if (peek() == ',') {
          ++I;
          continue;
        }
        expect('}');
        break;
      }
    }
    skip();
    if (I != S.size())
      bad("text after the entry's closing brace");
    return strings;
  }

private:
  [[noreturn]] void bad(const std::string &what) {
    fail(ErrorKind::Invalid) << Where << ": not a tuning entry: " << what << " (column " << I + 1
                             << ")";
    std::abort();
  }
  char peek() const { return I < S.size() ? S[I] : '\0'; }
  void skip() {
    while (I < S.size() && (S[I] == ' ' || S[I] == '\t' || S[I] == '\r'))
      ++I;
  }
  void expect(char c) {
    skip();
    if (peek() != c)
      bad(std::string("expected '") + c + "'");
    ++I;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (I < S.size() && S[I] != '"') {
      char c = S[I++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (I >= S.size())
        break;
      char e = S[I++];
      switch (e) {
      case '"': case '\\': case '/': out += e; break;
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        if (I + 4 > S.size())
          bad("a short \\u escape");
        unsigned v = (unsigned)std::strtoul(S.substr(I, 4).c_str(), nullptr, 16);
        I += 4;
        if (v < 0x80) {
          out += (char)v;
        } else if (v < 0x800) {
          out += (char)(0xC0 | (v >> 6));
          out += (char)(0x80 | (v & 0x3F));
        } else {
          out += (char)(0xE0 | (v >> 12));
          out += (char)(0x80 | ((v >> 6) & 0x3F));
          out += (char)(0x80 | (v & 0x3F));
        }
        break;
      }
      default: bad(std::string("an unknown escape \\") + e);
      }
    }
    if (peek() != '"')
      bad("an unterminated string");
    ++I;
    return out;
  }
  double number() {
    const char *begin = S.c_str() + I;
    char *end = nullptr;
    double v = std::strtod(begin, &end);
    if (end == begin || !std::isfinite(v))
      bad("expected a string or a number");
    I += (size_t)(end - begin);
    return v;
  }

  const std::string &S;
  std::string Where;
  size_t I = 0;
};

/// `s` as a JSON string: quotes, backslashes and control bytes escaped,
/// every other byte as it is (so that parse reads back the same bytes).
std::string quoted(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if ((unsigned char)c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", (unsigned)(unsigned char)c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string number(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string dims(const Shape &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

template <class T> std::string list(const std::vector<T> &v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i)
    os << (i ? "," : "") << v[i];
  os << "]";
  return os.str();
}

} // namespace

TuneDb TuneDb::parse(const std::string &text, const std::string &path) {
  TuneDb db;
  std::istringstream in(text);
  size_t lineNo = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNo;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    std::string where = path + ":" + std::to_string(lineNo);
    std::map<std::string, double> numbers;
    std::map<std::string, std::string> strings = LineParser(line, where).object(numbers);
    TuneEntry e;
    auto str = [&](const char *key, std::string &to) {
      auto it = strings.find(key);
      if (it == strings.end())
        fail(ErrorKind::Invalid) << where << ": not a tuning entry: no string member \"" << key
                                 << "\"";
      to = it->second;
    };
    auto num = [&](const char *key, double &to) {
      auto it = numbers.find(key);
      if (it == numbers.end())
        fail(ErrorKind::Invalid) << where << ": not a tuning entry: no number member \"" << key
                                 << "\"";
      to = it->second;
    };
    str("signature", e.Signature);
    str("target", e.Target);
    str("compiler", e.Compiler);
    str("measure", e.Measure);
    str("plan", e.Plan);
    str("default_plan", e.DefaultPlan);
    num("default", e.Default);
    num("tuned", e.Tuned);
    double candidates = 0;
    num("candidates", candidates);
    e.Candidates = (int64_t)candidates;
    db.put(e);
  }
  return db;
}

TuneDb TuneDb::read(const std::string &path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return TuneDb{};
  return parse(readFile(path, "tuning database"), path);
}

std::string TuneDb::text() const {
  std::ostringstream os;
  for (const auto &[key, e] : Entries)
    os << "{\"signature\": " << quoted(e.Signature)
       << ", \"target\": " << quoted(e.Target)
       << ", \"compiler\": " << quoted(e.Compiler)
       << ", \"measure\": " << quoted(e.Measure)
       << ", \"plan\": " << quoted(e.Plan)
       << ", \"default_plan\": " << quoted(e.DefaultPlan)
       << ", \"default\": " << number(e.Default) << ", \"tuned\": " << number(e.Tuned)
       << ", \"candidates\": " << e.Candidates << "}\n";
  return os.str();
}

const TuneEntry *TuneDb::find(const std::string &signature, const std::string &target,
                              const std::string &compiler) const {
  auto it = Entries.find({signature, target, compiler});
  return it == Entries.end() ? nullptr : &it->second;
}

void TuneDb::put(const TuneEntry &e) { Entries[{e.Signature, e.Target, e.Compiler}] = e; }

size_t TuneDb::foreign(const std::string &target, const std::string &compiler) const {
  size_t n = 0;
  for (const auto &[key, e] : Entries)
    n += e.Target != target || e.Compiler != compiler;
  return n;
}

std::string kernelSignature(const ir::Node &n) {
  std::ostringstream os;
  os << (n.Domain.empty() ? "" : n.Domain + ".") << n.OpType;
  for (const ir::Value *v : n.Inputs) {
    if (!v) {
      os << " -";
      continue;
    }
    os << " " << dtypeName(v->Type.Type) << dims(v->Type.Dims) << (v->Const ? "=c" : "");
  }
  os << " ->";
  for (const ir::Value *v : n.Outputs)
    os << " " << (v ? std::string(dtypeName(v->Type.Type)) + dims(v->Type.Dims) : "-");
  for (const auto &[name, a] : n.Attrs) {
    os << " " << name << "=";
    switch (a.Kind) {
    case ir::AttrKind::Int: os << a.I; break;
    case ir::AttrKind::Float: os << number(a.F); break;
    case ir::AttrKind::String: os << quoted(a.S); break;
    case ir::AttrKind::Ints: os << list(a.Ints); break;
    case ir::AttrKind::Floats: os << list(a.Floats); break;
    default: os << "(" << (int)a.Kind << ")"; break;
    }
  }
  return os.str();
}

} // namespace mlcc::schedule
