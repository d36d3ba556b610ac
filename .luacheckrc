std = "lua54"
max_line_length = 130
files["spec"] = {std = "+busted"}
exclude_files = {"build*", ".luarocks*"}
