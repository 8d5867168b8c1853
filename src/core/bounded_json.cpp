#include "p2pscope/bounded_json.hpp"
#include "p2pscope/json_words.hpp"
#include "p2pscope/text.hpp"

#include <string>

namespace p2pscope {
namespace {

using json = nlohmann::json;

// nlohmann's own DOM builder, behind a gate that counts depth, values and string
// lengths and refuses (returns false, which stops the parser) at the first excess.
class LimitedSax {
 public:
  LimitedSax(json& out, const JsonLimits& l) : dom_(out, false), l_(l) {}
  std::string error;
  std::size_t error_byte = std::string::npos;

  bool null() { return value() && dom_.null(); }
  bool boolean(bool v) { return value() && dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return value() && dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value() && dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return value() && dom_.number_float(v, s); }
  bool string(json::string_t& s) { return text(s, "a string") && value() && dom_.string(s); }
  bool binary(json::binary_t&) { return refuse("binary values are not JSON text"); }
  bool key(json::string_t& s) { return text(s, "a key") && value() && dom_.key(s); }
  bool start_object(std::size_t n) { return open() && dom_.start_object(n); }
  bool start_array(std::size_t n) { return open() && dom_.start_array(n); }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& e) {
    // nlohmann quotes the bytes it last read: the peer's, raw (invalid UTF-8, escapes).
    if (error.empty()) error_byte = pos;
    if (error.empty()) error = "not JSON at byte " + std::to_string(pos) + " (" + json_error_words(e.what()) + ")";
    return false;
  }

 private:
  bool refuse(std::string why) {
    if (error.empty()) error = std::move(why);
    return false;
  }
  bool value() {
    if (++elements_ > l_.max_elements)
      return refuse("more than " + std::to_string(l_.max_elements) + " values and keys");
    return true;
  }
  bool open() {
    if (++depth_ > l_.max_depth) return refuse("nested deeper than " + std::to_string(l_.max_depth) + " levels");
    return value();
  }
  bool text(const json::string_t& s, const char* what) {
    if (s.size() > l_.max_string_bytes)
      return refuse(std::string(what) + " of " + std::to_string(s.size()) + " bytes (limit " +
                    std::to_string(l_.max_string_bytes) + ")");
    return true;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const JsonLimits& l_;
  std::size_t depth_ = 0, elements_ = 0;
};

}  // namespace

BoundedJson parse_json_bounded(std::string_view text, const JsonLimits& limits) {
  BoundedJson out;
  if (text.size() > limits.max_bytes) {
    out.error = std::to_string(text.size()) + " bytes of JSON (limit " + std::to_string(limits.max_bytes) + ")";
    out.value = json(json::value_t::discarded);
    return out;
  }
  json v;
  LimitedSax sax(v, limits);
  bool ok = false;
  try {
    ok = json::sax_parse(text.begin(), text.end(), &sax, json::input_format_t::json, true);
  } catch (const json::exception& e) {  // the DOM builder's own refusals (none expected without exceptions)
    sax.error = json_error_words(e.what());
  }
  if (!ok || !sax.error.empty()) {
    out.error = sax.error.empty() ? "not JSON" : sax.error;
    out.error_byte = sax.error_byte;
    // The partial value is at most max_depth deep: destroying it is safe.
    out.value = json(json::value_t::discarded);
    return out;
  }
  out.value = std::move(v);
  return out;
}

}  // namespace p2pscope
