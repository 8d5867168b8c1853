#pragma once
// The JSON library's exception text in our words, for a message that names the file:
// "[json.exception.parse_error.101] parse error at line 1, column 12: syntax error while
// parsing value - unexpected end of input; expected ..." reads "line 1, column 12:
// unexpected end of input"; "[json.exception.type_error.302] type must be number, but is
// string" reads "a string where a number belongs". The library's tag never reaches a user.
#include <string>
#include <string_view>

namespace p2pscope {

std::string json_error_words(std::string_view what);

}  // namespace p2pscope
