# bash completion for airlock. Commands and options are read from the binary's own --help,
# so they are always those of the airlock being completed.

_airlock_words_of() {  # the options a help text names
  grep -oE -- '(^|[ ,])--?[a-zA-Z][a-zA-Z0-9-]*' | tr -d ' ,' | sort -u
}

_airlock() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local airlock=${COMP_WORDS[0]} cmd=${COMP_WORDS[1]:-} i
  COMPREPLY=()
  if ((COMP_CWORD == 1)); then
    mapfile -t COMPREPLY < <(compgen -W "$("$airlock" --help 2>/dev/null |
      awk '/^Commands:/ {f = 1; next} f && /^  [a-z]/ {print $1} f && /^$/ {f = 0}') --help" -- "$cur")
    return
  fi
  # After `run ... --`, the sandboxed command and its arguments.
  if [[ $cmd == run ]]; then
    for ((i = 2; i < COMP_CWORD; i++)); do
      if [[ ${COMP_WORDS[i]} == -- ]]; then
        if ((i + 1 == COMP_CWORD)); then
          mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
        else
          mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        fi
        return
      fi
    done
  fi
  case $prev in
    -c | --config | --log | --control | --state-dir | --rw | --ro)
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return
      ;;
    --netns)
      mapfile -t COMPREPLY < <(compgen -W "$(ip netns list 2>/dev/null | awk '{print $1}')" -- "$cur")
      return
      ;;
  esac
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$("$airlock" "$cmd" --help 2>/dev/null | _airlock_words_of)" -- "$cur")
    return
  fi
  mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}

complete -F _airlock airlock
