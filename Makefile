# jobque-profile: `make demo` and `make test` work on a fresh Debian machine as root.
LUA        ?= lua5.4
BUSTED     := /usr/bin/busted
DEB_PACKAGES := lua5.4 liblua5.4-dev lua-cjson lua-busted lua-check luarocks cmake gcc make \
                libc6-dev valgrind lua-luv lua-argparse chromium protobuf-compiler
BUILD_ARGS := -DJOBQUE_TESTING=ON

.PHONY: all deps build build-sanitizers demo spec test lint-js bench mutate mutate-random clean

all: build

# Installs only the Debian packages that are missing (apt-get needs root):
# with every one there, it installs nothing and needs no root, and so
# neither does `make build`. Node.js and npm (for the JavaScript lint of
# `make test`) count as there when the npm command is, wherever it came from.
deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	command -v npm >/dev/null 2>&1 || missing="$$missing nodejs npm"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "run as root (or install them yourself): apt-get install$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$$missing >/dev/null; \
	fi

build: deps
	cmake -S . -B build $(BUILD_ARGS) >/dev/null
	cmake --build build -j2

build-sanitizers: deps
	cmake -S . -B build-address $(BUILD_ARGS) -DJOBQUE_SANITIZE=address -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build-address -j2
	cmake -S . -B build-thread $(BUILD_ARGS) -DJOBQUE_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build-thread -j2

demo: build
	LUA_PATH="lua/?.lua;;" LUA_CPATH="build/?.so;;" $(LUA) examples/tokens.lua trace.json
	@echo
	LUA_CPATH="build/?.so;;" $(LUA) lua/jobque-profile.lua report trace.json
	LUA_CPATH="build/?.so;;" $(LUA) lua/jobque-profile.lua html trace.json -o timeline.html

# The specs once, on the plain build (what `luarocks test` runs); the
# consumer checks (spec/record/consumers_spec.lua) need the npm packages.
spec: build node_modules/.package-lock.json
	JQ_BUILD=build $(LUA) $(BUSTED)

# ESLint, and the consumers the specs read our traces with (Chrome DevTools'
# trace engine, speedscope), at the versions package-lock.json pins, from
# the npm registry (the test setup: `make deps` put npm there); again only
# when the lock changes.
node_modules/.package-lock.json: package.json package-lock.json | deps
	npm ci --no-audit --no-fund

# The timeline page's JavaScript, linted (spec/run-all.sh runs the same).
lint-js: node_modules/.package-lock.json
	node_modules/.bin/eslint --max-warnings 0 lua/jobque_profile/page spec/consumers eslint.config.js

# Everything: lint, specs plain and under ASan and TSan, valgrind, the rock.
test: build build-sanitizers node_modules/.package-lock.json
	sh spec/run-all.sh

# Mutation testing (slow, not part of test): each mutant of spec/mutants.txt
# applied to a scratch copy, built there, the plain specs run against it.
# `make mutate MUTANTS="id1 id2"` runs only those.
mutate: deps node_modules/.package-lock.json
	$(LUA) spec/mutate.lua $(MUTANTS)

# Generated mutants (spec/mutate_random.lua): N sites of src/ and lua/
# drawn at random, each run against the specs of spec/mutate_map.lua.
# SEED=s replays a run (its seed is printed).
N ?= 100
mutate-random: deps node_modules/.package-lock.json
	JQ_MUTATE_SEED=$(SEED) $(LUA) spec/mutate_random.lua $(N)

bench: build
	LUA_PATH="lua/?.lua;;" LUA_CPATH="build/?.so;;" $(LUA) bench/record.lua
	LUA_PATH="lua/?.lua;;" LUA_CPATH="build/?.so;;" $(LUA) bench/save.lua
	LUA_PATH="lua/?.lua;;" LUA_CPATH="build/?.so;;" $(LUA) bench/queue.lua
	LUA_PATH="lua/?.lua;;" LUA_CPATH="build/?.so;;" $(LUA) bench/whatif.lua
	LUA_PATH="lua/?.lua;;" LUA_CPATH="build/?.so;;" $(LUA) bench/report.lua
	LUA_PATH="lua/?.lua;;" LUA_CPATH="build/?.so;;" $(LUA) bench/edges_load.lua
	LUA_PATH="lua/?.lua;;" LUA_CPATH="build/?.so;;" $(LUA) bench/sample.lua
	LUA_PATH="lua/?.lua;;" LUA_CPATH="build/?.so;;" $(LUA) bench/coroutine.lua

clean:
	rm -rf build build-address build-thread trace.json timeline.html
